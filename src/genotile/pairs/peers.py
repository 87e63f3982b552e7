"""Peer-format and relatedness outputs of a merged metric, made from its tiles.

Each output is opt-in per dataset (`formats:`, `king_degrees:`, `king_cutoff:`) and made by its
own rule, after the tiles: the passing pairs (`passing_pairs`) for .kin0, degrees and the
unrelated set; the dense matrix (`dense_values`) for the formats that hold every pair (.mdist,
snp-dists). Tiles are checked as the merge checks them (`merge.read_tiles`).
"""

import logging
from pathlib import Path

import numpy as np

from genotile.core.metrics import Metric, get_metric
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.io import peer_formats
from genotile.io.tsvgz import format_column, write_tsv_gz
from genotile.pairs import relatedness
from genotile.pairs.merge import dense_values, read_tiles
from genotile.store import duplicates
from genotile.store.manifest import STORE_KEYS, tile_identities
from genotile.util.readback import load_json

log = logging.getLogger("genotile")


def passing_pairs(tile_paths, plan: Plan, metric: Metric, store=None, distinct_index=None) -> dict[str, np.ndarray]:
    """{"a", "b", *metric.columns}: every pair passing the threshold, a < b, sorted by a then b
    (the rows of pairs.tsv.gz); `distinct_index`: a collapsed store's (store/duplicates.py)."""
    parts, selves = [], []
    for path, arrays, _meta, _digest in read_tiles(tile_paths, plan, metric, store, skip=("dense",)):
        parts.append({k: arrays[k] for k in ("a", "b", *metric.columns)})
        if distinct_index is not None:
            selves.append(duplicates.self_pairs(path, arrays, metric, plan))
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    if distinct_index is not None:
        merged = duplicates.expand_merged(merged, selves, np.asarray(distinct_index), plan.n_vectors, metric)
    order = np.lexsort((merged["b"], merged["a"]))
    return {k: v[order] for k, v in merged.items()}


def store_pairs(tile_paths, manifest: dict, metric: Metric) -> dict[str, np.ndarray]:
    """`passing_pairs` of the tiles of the store a manifest describes (its plan, its earlier
    parts' tile identities, its collapsed copies)."""
    plan = Plan.from_json(manifest["plan"])
    return passing_pairs(tile_paths, plan, metric, tile_identities(manifest), manifest.get("distinct_index"))


def write_kin0(pairs: dict, ids, out_path, fids=None) -> int:
    return peer_formats.write_kin0(
        out_path, ids, pairs["a"], pairs["b"], pairs["nsnp"], pairs["hethet"], pairs["ibs0"], pairs["kinship"], fids
    )


def write_degrees(pairs: dict, ids, out_path) -> int:
    """degrees.tsv.gz: `id1 id2 kinship degree ibs0 relationship`, the rows of pairs.tsv.gz with
    KING's degree, the IBS0 proportion and KING's relationship type (relatedness.relationship)."""
    ids_arr = np.asarray(ids, dtype=object)
    kinship = pairs["kinship"]
    ibs0 = relatedness.ibs0_proportion(pairs["ibs0"], pairs["nsnp"])
    columns = [
        ids_arr[pairs["a"]],
        ids_arr[pairs["b"]],
        format_column(kinship),
        relatedness.degree(kinship),
        format_column(ibs0),
        relatedness.relationship(kinship, ibs0),
    ]
    return write_tsv_gz(out_path, ("id1", "id2", "kinship", "degree", "ibs0", "relationship"), columns)


def write_king_cutoff(pairs: dict, ids, cutoff: float, in_path, out_path, fids=None) -> np.ndarray:
    """The unrelated set (relatedness.unrelated_set) as king.unrelated.in.id / .out.id, in PLINK 2's
    .king.cutoff.in.id / .out.id form."""
    keep = relatedness.unrelated_set(len(ids), pairs["a"], pairs["b"], pairs["kinship"], cutoff)
    peer_formats.write_king_cutoff_ids(in_path, out_path, ids, keep, fids)
    return keep


def write_outputs(tiles, manifest_path, metric_name: str, paths, *, king_cutoff: float | None = None) -> None:
    """Write the outputs `paths` of one dataset and metric, each chosen by its file name
    (peer_formats.FORMATS, DEGREES_FILE, KING_CUTOFF_FILES; a pair of files comes together).

    The manifest's `fids` and `iids` (a PLINK fileset's family and individual IDs) go to the
    FID and IID columns of .kin0, .mdist.id and the king-cutoff lists; without `fids` (a VCF, a
    .psam without FID) a .kin0 has no FID columns, as PLINK 2 writes it, and .mdist.id repeats
    the IID (`plink1.9 --double-id`).
    """

    manifest = load_json(manifest_path, "manifest", STORE_KEYS)
    plan = Plan.from_json(manifest["plan"])
    metric, ids = get_metric(metric_name), manifest["ids"]
    # a PLINK fileset's own columns (its manifest's `fids`, `iids`; genotile's IDs join them as
    # FID_IID when a FID is not 0): PLINK's files show them apart, as PLINK writes them
    fids, iids = manifest.get("fids"), manifest.get("iids") or ids
    distinct = manifest.get("distinct_index")
    by_name = {Path(p).name: p for p in paths}
    unknown = set(by_name) - KNOWN_FILES
    if unknown:
        raise GenotileError(f"no writer for {', '.join(sorted(unknown))}; known: {', '.join(sorted(KNOWN_FILES))}")
    store = tile_identities(manifest)  # an appended store's earlier tiles: their own (store/manifest.py)
    if by_name.keys() & PAIR_FILES:
        pairs = store_pairs(tiles, manifest, metric)
        if "plink2.kin0" in by_name:
            write_kin0(pairs, iids, by_name["plink2.kin0"], fids)
        if peer_formats.DEGREES_FILE in by_name:
            write_degrees(pairs, ids, by_name[peer_formats.DEGREES_FILE])
        if by_name.keys() & set(peer_formats.KING_CUTOFF_FILES):
            if king_cutoff is None:
                raise GenotileError(f"{manifest_path}: the king-cutoff lists need king_cutoff")
            in_path, out_path = (by_name[f] for f in peer_formats.KING_CUTOFF_FILES)
            keep = write_king_cutoff(pairs, iids, king_cutoff, in_path, out_path, fids)
            log.info("king cutoff %s: %d of %d samples kept", king_cutoff, int(keep.sum()), len(ids))
    if by_name.keys() & DENSE_FILES:
        where = ", ".join(sorted(by_name.keys() & DENSE_FILES))
        matrix = dense_values(tiles, plan, metric, store, where=where, distinct_index=distinct)
        if "plink.mdist" in by_name:
            peer_formats.write_mdist(by_name["plink.mdist"], by_name["plink.mdist.id"], iids, matrix, fids)
        # a query's rectangle (issue 27): rows the input's IDs, columns the FILE's
        rows, columns = (ids[: plan.n_query], ids[plan.n_query :]) if plan.n_against else (ids, None)
        if "snp-dists.molten.tsv" in by_name:
            peer_formats.write_snp_dists_molten(by_name["snp-dists.molten.tsv"], rows, matrix, columns)
        if "snp-dists.csv" in by_name:
            peer_formats.write_snp_dists_csv(by_name["snp-dists.csv"], rows, matrix, columns)


DENSE_FILES = {name for f in peer_formats.FORMATS.values() if f.dense for name in f.files}
PAIR_FILES = {
    *(name for f in peer_formats.FORMATS.values() if not f.dense for name in f.files),
    peer_formats.DEGREES_FILE,
    *peer_formats.KING_CUTOFF_FILES,
}
KNOWN_FILES = DENSE_FILES | PAIR_FILES
