"""ccc3 merge: check every triple file of the plan, then write triples.tsv.gz and summary.json.

Rows are unique triples id1 < id2 < id3 in input order, sorted by id1, id2, id3, whatever the
seed, block size or number of stages; numbers formatted and gzipped as merge.py does for pairs.
"""

import json
import time

import numpy as np

from genotile.core import ccc3
from genotile.core.keys import has_repeated_rows
from genotile.errors import GenotileError
from genotile.io.mergecheck import block_of, check_settings
from genotile.io.summary import input_provenance, output_records, versions
from genotile.io.tilefile import read_tile
from genotile.io.tsvgz import Cells, text_column, write_tsv_gz
from genotile.util.atomic import write_text
from genotile.util.progress import Progress


def read_triple_files(
    paths, plan: ccc3.Plan3, store: dict | None = None, params: dict | None = None, perm=None, expect=None
):
    """Yield (path, arrays, meta, sha256) per job file; refuse a missing, foreign or repeated one,
    one of another threshold (`expect`) and, given the permutation, one whose triples are not
    its blocks' (`check_triples`)."""
    expected = set(plan.jobs())
    blocks = None if perm is None else block_of(plan, perm)
    seen = set()
    progress = Progress("ccc3: triple files read", total=len(expected))
    for path in paths:
        arrays, meta, digest = read_tile(path)
        job = (*meta.get("tile", ()), meta.get("stage"))
        if meta.get("metric") != ccc3.NAME or job not in expected:
            raise GenotileError(f"triple file {path}: holds {meta.get('metric')} job {job}, not one of this plan's")
        if meta.get("plan3") != {"block_size": plan.block_size, "stages": plan.stages}:
            raise GenotileError(
                f"triple file {path}: computed with {meta.get('plan3')}, not this plan's block size "
                f"{plan.block_size} and {plan.stages} stage(s); delete it and rerun"
            )
        if store is not None and meta.get("store") != store:
            raise GenotileError(
                f"triple file {path}: computed from another input or plan than this store; delete it and rerun"
            )
        if params is not None and meta.get("params") != params:
            raise GenotileError(
                f"triple file {path}: computed with ccc parameters {meta.get('params')}, "
                f"not {params}; delete it and rerun"
            )
        if job in seen:
            raise GenotileError(f"triple file {path}: job {job} given twice")
        check_settings(path, meta, expect or {}, what="triple file")
        if blocks is not None:
            check_triples(path, arrays, meta, plan, blocks)
        seen.add(job)
        progress.update(len(seen))
        yield path, arrays, meta, digest
    progress.finish(len(seen))
    missing = sorted(expected - seen)
    if missing:
        raise GenotileError(f"{len(missing)} triple file(s) missing, e.g. {missing[:5]}: rerun the triple jobs")


def check_triples(path, arrays: dict, meta: dict, plan: ccc3.Plan3, blocks: np.ndarray) -> None:
    """0 <= a < b < c < n, the blocks of each triple those of the job, no triple twice, as many as
    the file says, every one passing its threshold."""
    names = ("a", "b", "c", *ccc3.COLUMNS)
    absent = [k for k in names if k not in arrays]
    size = meta.get("triples_passing")
    if absent or any(arrays[k].ndim != 1 or arrays[k].shape != (size,) for k in names):
        raise GenotileError(f"triple file {path}: its arrays do not all hold its {size} triples; delete it and rerun")
    a, b, c = arrays["a"], arrays["b"], arrays["c"]
    if any(x.dtype.kind not in "iu" for x in (a, b, c)):
        raise GenotileError(f"triple file {path}: indices are not integers; delete it and rerun")
    bad = (a < 0) | (a >= b) | (b >= c) | (c >= plan.n_vectors)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise GenotileError(
            f"triple file {path}: triple ({a[k]}, {b[k]}, {c[k]}) is not 0 <= a < b < c < {plan.n_vectors}; "
            "delete it and rerun"
        )
    got = np.sort(np.stack([blocks[a], blocks[b], blocks[c]], axis=1), axis=1)
    wrong = (got != np.asarray(meta["tile"])).any(axis=1)
    if wrong.any():
        k = int(np.flatnonzero(wrong)[0])
        raise GenotileError(
            f"triple file {path}: triple ({a[k]}, {b[k]}, {c[k]}) lies in blocks {tuple(got[k].tolist())}, "
            f"not this job's {tuple(meta['tile'])}; delete it and rerun"
        )
    if has_repeated_rows(np.stack([a, b, c], axis=1)):
        raise GenotileError(f"triple file {path}: a triple is listed twice; delete it and rerun")
    threshold = meta.get("threshold")
    if threshold is not None and a.size and not ccc3.passes(arrays, threshold).all():
        raise GenotileError(
            f"triple file {path}: holds triples that do not pass its threshold {threshold}; delete it and rerun"
        )


def merge_triples(
    paths,
    ids: list[str],
    plan: ccc3.Plan3,
    out_path,
    store: dict | None = None,
    params: dict | None = None,
    perm=None,
    expect=None,
) -> dict:
    parts, jobs = [], []
    for path, arrays, meta, digest in read_triple_files(paths, plan, store, params, perm, expect):
        parts.append({k: arrays[k] for k in ("a", "b", "c", *ccc3.COLUMNS)})
        jobs.append({"file": str(path), "sha256": digest, **meta})
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    order = np.lexsort((merged["c"], merged["b"], merged["a"]))
    columns: list = [Cells(ids, merged[x][order]) for x in ("a", "b", "c")]
    columns += [text_column(merged[col][order]) for col in ccc3.COLUMNS]
    write_tsv_gz(out_path, ("id1", "id2", "id3", *ccc3.COLUMNS), columns)
    return {"triples_passing": int(order.size), "jobs": jobs}


def write_summary(
    out_path,
    *,
    manifest: dict,
    plan: ccc3.Plan3,
    merged: dict,
    outputs: dict,
    config: dict,
    started: float | None = None,
) -> dict:
    jobs = merged["jobs"]
    computed = sum(j["triples_computed"] for j in jobs)
    seconds_counts = sum(j["seconds_counts"] for j in jobs)
    fields = manifest["n_kept"]
    if computed != plan.n_triples:
        raise GenotileError(f"{out_path}: the triple files computed {computed} triples, the plan has {plan.n_triples}")
    summary = {
        "metric": ccc3.NAME,
        "columns": list(ccc3.COLUMNS),
        "n_vectors": manifest["n_vectors"],
        "n_fields": manifest["n_fields"],
        "n_fields_kept": fields,
        "triples_computed": computed,
        "triples_passing": merged["triples_passing"],
        "threshold": config.get("threshold"),
        "keep": "ge_any",
        "backend": sorted({j["backend"] for j in jobs}),
        "plan": plan.to_json(),
        **input_provenance(manifest),
        "outputs": output_records(outputs),
        "jobs": [
            {
                "job": [*j["tile"], j["stage"]],
                "file": j["file"],
                "sha256": j["sha256"],
                "triples_passing": j["triples_passing"],
                "seconds": j["seconds_total"],
            }
            for j in jobs
        ],
        "timings": {
            "job_seconds_total": sum(j["seconds_total"] for j in jobs),
            "job_seconds_counts": seconds_counts,
            "element_comparisons_per_s_counts": computed * fields / seconds_counts if seconds_counts else None,
            "merge_seconds": None if started is None else time.perf_counter() - started,
        },
        "config": config,
        "versions": versions(),
    }
    write_text(out_path, json.dumps(summary, indent=1) + "\n")
    return summary
