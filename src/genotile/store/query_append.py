"""A query whose FILE grew: records added at the end of the FILE compute only their cross pairs
(issue 27, point 3: "FILE may grow too, with the same rule as 1").

A query store keeps, beside its files and out of Snakemake's outputs, a record of what it was
made from (`query.json`): the input's sources (store/sources.py: its size, digest, option files),
the FILE's size and the SHA-256s of its pieces (util/checksums.file_pieces), the settings, the
plan and the key and identity of each part. When the store is made again with the input
unchanged and the FILE the earlier one with FASTA records added after its last byte (its first
pieces the recorded ones, the piece the earlier size ends in hashed up to it, and a record
starting there), the query plan keeps the earlier plan's permutation and blocks, the FILE's new
records permuted and blocked after its earlier ones (core/plan.py: a query plan's `segments`):
the earlier tiles (input block, earlier FILE block) hold the same cross pairs of the same vectors
and stay valid, whatever the grown store's encoding; only the tiles of a new FILE block are
computed. The store itself is made as any query store (store/query.py: from the FILE's all-pairs
store where it has one, else both files read), so its rows are a fresh query store's; the merge
reads every tile and writes what a fresh query writes.

Anything else is a query made in full, saying why in one line: the input changed, the FILE
changed before its end (an edit, records removed or reordered), other settings, genotype files
(records added to a VCF are variants, which change every vector).
"""

import json
import logging
import os
from pathlib import Path

from genotile.core.encodings import ENCODINGS
from genotile.core.plan import Plan
from genotile.store import append, stage
from genotile.store.manifest import part_key, store_identity
from genotile.store.sources import content_size, differences, recorded_pieces, sources
from genotile.util.atomic import write_record
from genotile.util.checksums import PIECE, file_pieces, pieces, range_digests
from genotile.version import __version__

log = logging.getLogger("genotile")

RECORD = "query.json"  # beside the query store's files (not `append.json`: no all-pairs store of FILE)


def read_record(store_dir) -> dict | None:
    """The record of the last query store made in `store_dir`, or None (missing, damaged, or of
    another version)."""
    d = stage.read_recorded(Path(store_dir) / RECORD)
    return d if d is not None and d.get("genotile") == __version__ else None


def _file_pieces(against) -> list[str]:
    """The FILE's pieces' SHA-256s (hex): its workflow fingerprint's, else hashed on threads."""
    recorded = recorded_pieces(against)
    return recorded if recorded is not None else [d.hex() for d in file_pieces(against)]


def grown_by(record: dict | None, input_path, against, settings: dict, options) -> tuple[int, str]:
    """The FILE's vectors of the earlier query store (n_against) where the FILE grew at its end
    and nothing else changed, else 0; and why not, in words ("" where there is no earlier
    query store, or nothing to compare)."""
    if record is None or not os.path.isfile(against):
        return 0, ""
    changed = append.settings_changed(record, settings)
    if changed:
        return 0, changed
    if ENCODINGS[settings["encoding"]].source != "alignment" or str(against).lower().endswith(".gz"):
        return 0, "the FILE is not an uncompressed FASTA (records appended are recognised there only)"
    differ = differences(record["input"], sources(input_path, options))
    if differ:
        return 0, f"the input changed ({'; '.join(differ)})"
    old, size = int(record["against"]["size"]), content_size(against)
    if size <= old:
        return 0, "the FILE changed, and not by records added at its end"
    with open(against, "rb") as fh:
        fh.seek(old - 1)
        if fh.read(2) != b"\n>":
            return 0, "the FILE's last record was extended, or its last line had no newline"
    earlier, grown = record["against"]["pieces"], _file_pieces(against)
    n_full = old // PIECE
    partial = [d.hex() for d in range_digests(against, pieces(old)[n_full:])]
    if grown[:n_full] != earlier[:n_full] or partial != earlier[n_full:]:
        return 0, "the FILE's earlier bytes changed (an edit before the end, or records removed or reordered)"
    return int(record["plan"]["n_against"]), ""


def plan(manifest: dict, record: dict, n_against_before: int, say) -> Plan | None:
    """The query plan of a grown FILE: the earlier plan, its FILE part grown by a segment of the
    new records; None where the store's vectors are not the earlier ones then the new ones."""
    before = Plan.from_json(record["plan"])
    q = manifest["query"]
    if q["n_input"] != before.n_query or q["n_against"] <= n_against_before:
        return None
    if append.ids_digest(manifest["ids"][: before.n_vectors]) != record["ids_sha256"]:
        return None
    added = int(q["n_against"]) - n_against_before
    p = Plan(
        before.n_query + int(q["n_against"]),
        before.block_size,
        before.seed,
        n_against=int(q["n_against"]),
        segments=(*before.segments, added),
    )
    tiles = p.appended_tiles()
    say(
        f"{added} vectors appended to the FILE's {n_against_before}: {p.n_query * added:,} cross pairs to compute "
        f"(of {p.n_pairs:,}), {len(tiles)} of {len(p.tiles())} tiles; the earlier tiles are kept"
    )
    return p


def with_parts(manifest_path: Path, record: dict, added: int) -> None:
    """The grown query store's manifest given the earlier parts whose tiles are accepted
    (store/manifest.py tile_identities), before any tile reads it."""
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["appended"] = {"parts": list(record["parts"]), "vectors": added}
    write_record(manifest_path, manifest)


def write(store_dir: Path, input_path, against, settings: dict, options) -> None:
    """query.json for the query store just made in `store_dir` (its manifest written): written
    last, so that a job killed before it leaves the earlier record, whose store it then makes
    again."""
    manifest = json.loads((store_dir / "manifest.json").read_text(encoding="utf-8"))
    n_earlier = len(manifest["ids"]) - int(manifest["query"]["n_against"])
    parts = [
        *(manifest.get("appended") or {}).get("parts", []),
        {"store": store_identity(manifest), "key": part_key(manifest)},
    ]
    write_record(
        store_dir / RECORD,
        {
            "genotile": __version__,
            "settings": settings,
            "input": sources(input_path, options),
            "against": {"path": str(against), "size": content_size(against), "pieces": _file_pieces(against)},
            "ids_sha256": append.ids_digest(manifest["ids"]),
            "n_input": n_earlier,
            "plan": manifest["plan"],
            "parts": parts,
        },
    )


def settings_of(encoding: str, options, block_size, seed: int) -> dict:
    """What, besides its two files, a query store is made with (store/append.settings_of; a
    query collapses no identical vectors)."""
    return append.settings_of(encoding, options, False, block_size, seed)
