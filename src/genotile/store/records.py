"""The names of the records a store's folder holds beside the store job's outputs.

The standard library only: a store job looks for them first thing, before its imports
(scripts/store.py forks an append's GPU worker before it starts a thread).
"""

APPEND = "append.json"  # an all-pairs store's: what an append checks and extends (store/append.py)
QUERY = "query.json"  # a query store's (store/query_append.py; not `append.json`: no all-pairs store of FILE)
