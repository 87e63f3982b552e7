"""The packed store's manifest: the keys every reader needs, and what identifies the store.

Pairs, triples and the peer-format writers all read the store through these, so the
fact of what a store manifest holds lives in one place.
"""

STORE_KEYS = ("n_vectors", "n_kept", "ids", "plan", "layout", "input", "input_sha256")


def store_identity(manifest: dict) -> dict:
    """What a tile was computed from: the input's checksum and the plan (size, blocks, seed)."""
    return {"input_sha256": manifest["input_sha256"], "plan": manifest["plan"]}
