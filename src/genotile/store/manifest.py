"""The packed store's manifest: the keys every reader needs, and what identifies the store.

Pairs, triples and the peer-format writers all read the store through these, so the
fact of what a store manifest holds lives in one place.
"""

STORE_KEYS = ("n_vectors", "n_kept", "ids", "plan", "layout", "input", "input_sha256")


def store_identity(manifest: dict) -> dict:
    """What a tile was computed from: the input's checksum and the plan (size, blocks, seed)."""
    return {"input_sha256": manifest["input_sha256"], "plan": manifest["plan"]}


# -- appended stores (store/append.py, issue 27) --
#
# A store appended to records, under `appended`, each earlier part's identity and key: the tiles
# of an earlier part (both blocks among the vectors that part ended with) were computed from the
# store as it was then, and stay valid, since a pair's value depends on its two vectors alone.


def part_key(manifest: dict) -> str:
    """A SHA-256 of everything the store manifest holds but its `appended` record (input,
    options, plan, layout, IDs, duplicates, version): the key of its last part, which a tile
    of that part is computed from; the tile rule's `store` param (rules/tiles.smk), so that
    Snakemake reruns a tile whose part was made again, and no other."""
    import hashlib
    import json

    body = {k: v for k, v in manifest.items() if k != "appended"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def earlier_parts(manifest: dict) -> list[dict]:
    """[{"store": identity, "key": key}] of each part before the last (none: one part)."""
    return list((manifest.get("appended") or {}).get("parts") or [])


def part_keys(manifest: dict) -> list[str]:
    """The key of each part of the plan, the last one this store's."""
    return [p["key"] for p in earlier_parts(manifest)] + [part_key(manifest)]


def tile_identities(manifest: dict):
    """tile (I, J) -> the store identities a tile file of it may record: this store's, and, for a
    tile of an earlier part, the identity of the store of that part or of any part after it (each
    kept the part's blocks, so the tile's pairs)."""
    from genotile.core.plan import Plan

    plan = Plan.from_json(manifest["plan"])
    current = store_identity(manifest)
    earlier = [p["store"] for p in earlier_parts(manifest)]

    def accepted(tile) -> list[dict]:
        # the store of the tile's part, or of any part after it: each kept that part's blocks (a
        # tile recomputed after an append, a kill or a deletion records a later store's identity)
        part = plan.part_of_block(int(tile[1])) if earlier else 0
        return [current, *earlier[part:]]

    return accepted
