"""The ingest and pack stages: an input's vectors as codes, then as bit planes in a packed store.

The 2-way (`pairs`) and 3-way (`triples`) workloads both read the store.
"""
