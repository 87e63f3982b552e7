"""ccc3 merge: check every triple file of the plan, then write triples.tsv.gz and summary.json.

Rows are unique triples id1 < id2 < id3 in input order, sorted by id1, id2, id3, whatever the
seed, block size or number of stages; numbers formatted and gzipped as merge.py does for pairs.
"""

import contextlib
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from genotile.core import ccc3
from genotile.errors import GenotileError
from genotile.io.matrix_tsv import COMPILED_MIN_FLOATS
from genotile.io.mergecheck import block_of, check_settings
from genotile.io.summary import input_provenance, output_records, versions
from genotile.io.tilefile import Column, read_tile_columns
from genotile.io.tsvgz import Cells, text_column, write_tsv_gz_parts
from genotile.util.atomic import write_text
from genotile.util.cpus import usable_cpus
from genotile.util.progress import Progress

MERGE_ROWS = 1 << 19  # triples sorted and formatted at once (a range of id1): ~0.3 GB of text tables
CHECK_ROWS = 1 << 20  # rows of a job file read at once while checking it
NAMES = ("a", "b", "c", *ccc3.COLUMNS)


@dataclass
class JobFile:
    """A checked job file whose triples stay in it: its columns and its sorted runs."""

    path: str
    meta: dict
    digest: str
    cols: dict[str, Column]
    runs: list[tuple[int, int]]  # (first row, end) of each run sorted by (a, b, c)

    def read(self, name: str, start: int, stop: int) -> np.ndarray:
        return self.cols[name].read(start, stop)


def read_triple_files(
    paths, plan: ccc3.Plan3, store: dict | None = None, params: dict | None = None, perm=None, expect=None
):
    """Yield a JobFile per job file, its digests checked (read a piece at a time); refuse a
    missing, foreign or repeated one, one of another threshold (`expect`) and, given the
    permutation, one whose triples are not its blocks' (`check_triples`)."""
    expected = set(plan.jobs())
    blocks = None if perm is None else block_of(plan, perm)
    seen = set()
    progress = Progress("ccc3: triple files read", total=len(expected))
    for path in paths:
        small, cols, meta, digest = read_tile_columns(path, NAMES)
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
        size = meta.get("triples_passing")
        lengths = small.get("runs", np.array([size if isinstance(size, int) else -1]))
        bad = lengths.ndim != 1 or (lengths < 0).any() or lengths.sum() != size
        if bad or any(c.items != size for c in cols.values()):
            raise GenotileError(
                f"triple file {path}: its arrays do not all hold its {size} triples; delete it and rerun"
            )
        ends = np.cumsum(lengths).tolist()
        found = JobFile(str(path), meta, digest, cols, list(zip([0, *ends[:-1]], ends, strict=True)))
        if blocks is not None:
            check_triples(found, plan, blocks)
        seen.add(job)
        progress.update(len(seen))
        yield found
    progress.finish(len(seen))
    missing = sorted(expected - seen)
    if missing:
        raise GenotileError(f"{len(missing)} triple file(s) missing, e.g. {missing[:5]}: rerun the triple jobs")


def check_triples(job: JobFile, plan: ccc3.Plan3, blocks: np.ndarray) -> None:
    """0 <= a < b < c < n, the blocks of each triple those of the job, each run sorted with no
    triple twice, every one passing its threshold; read CHECK_ROWS rows at a time."""
    path, meta = job.path, job.meta
    if any(job.cols[x].dtype.kind not in "iu" for x in "abc"):
        raise GenotileError(f"triple file {path}: indices are not integers; delete it and rerun")
    threshold = meta.get("threshold")
    for start, end in job.runs:
        last = None  # the previous piece's last triple
        for r0 in range(start, end, CHECK_ROWS):
            r1 = min(end, r0 + CHECK_ROWS)
            a, b, c = (job.read(x, r0, r1).astype(np.int64) for x in "abc")
            bad = (a < 0) | (a >= b) | (b >= c) | (c >= plan.n_vectors)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise GenotileError(
                    f"triple file {path}: triple ({a[k]}, {b[k]}, {c[k]}) is not 0 <= a < b < c < "
                    f"{plan.n_vectors}; delete it and rerun"
                )
            got = np.sort(np.stack([blocks[a], blocks[b], blocks[c]], axis=1), axis=1)
            wrong = (got != np.asarray(meta["tile"])).any(axis=1)
            if wrong.any():
                k = int(np.flatnonzero(wrong)[0])
                raise GenotileError(
                    f"triple file {path}: triple ({a[k]}, {b[k]}, {c[k]}) lies in blocks {tuple(got[k].tolist())}, "
                    f"not this job's {tuple(meta['tile'])}; delete it and rerun"
                )
            rows = np.stack([a, b, c], axis=1)
            if last is not None:
                rows = np.concatenate([last, rows])
            step = _order(rows)
            if (step == 0).any():
                raise GenotileError(f"triple file {path}: a triple is listed twice; delete it and rerun")
            if (step < 0).any():
                raise GenotileError(f"triple file {path}: its triples are not in order; delete it and rerun")
            last = rows[-1:]
            if threshold is not None and a.size:
                values = {col: job.read(col, r0, r1) for col in ccc3.COLUMNS}
                if not ccc3.passes(values, threshold).all():
                    raise GenotileError(
                        f"triple file {path}: holds triples that do not pass its threshold {threshold}; "
                        "delete it and rerun"
                    )


def _order(rows: np.ndarray) -> np.ndarray:
    """Per consecutive pair of rows (n, 3): the sign of row k+1 - row k in (a, b, c) order."""
    d = np.sign(np.diff(rows, axis=0))
    return np.where(d[:, 0] != 0, d[:, 0], np.where(d[:, 1] != 0, d[:, 1], d[:, 2]))


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
    """Every job file's triples into `out_path` sorted by (a, b, c), MERGE_ROWS at a time.

    The files are checked first, and the triples counted by id1 (a); id1 is then cut into ranges
    of at most MERGE_ROWS triples (or one id1's); for each range, each sorted run's rows of it
    (found by binary search) are read, sorted together, checked for a triple listed twice and
    formatted, one part of triples.tsv.gz (tsvgz.write_tsv_gz_parts). Memory is bounded by
    MERGE_ROWS, whatever the number of triples; the file is the same as from one sort of all.
    """
    files, per_a = [], np.zeros(plan.n_vectors, np.int64)
    for job in read_triple_files(paths, plan, store, params, perm, expect):
        files.append(job)
        for start, end in job.runs:
            for r0 in range(start, end, CHECK_ROWS):
                per_a += np.bincount(job.read("a", r0, min(end, r0 + CHECK_ROWS)), minlength=plan.n_vectors)
    bounds = _ranges(per_a, MERGE_ROWS)
    # numba loaded where the values pay for its start (matrix_tsv's rule): tsvgz formats them
    # compiled (948,095 triples' values took the merge job 5.7 s through the numpy path)
    if int(per_a.sum()) * len(ccc3.COLUMNS) >= COMPILED_MIN_FLOATS:
        with contextlib.suppress(ImportError):
            from genotile.io import text_kernels  # noqa: F401
    cuts = []  # per file, per run: the row where each range starts
    for job in files:
        a_col = job.cols["a"]
        mm = np.memmap(a_col.path, dtype=a_col.dtype, mode="r", offset=a_col.offset, shape=(a_col.items,))
        cuts.append([start + np.searchsorted(mm[start:end], bounds) for start, end in job.runs])
        del mm  # only the pages the searches touched were read

    def parts():
        for r in range(len(bounds) - 1):
            pieces = [
                (job, int(run_cuts[r]), int(run_cuts[r + 1]))
                for job, file_cuts in zip(files, cuts, strict=True)
                for run_cuts in file_cuts
                if run_cuts[r + 1] > run_cuts[r]
            ]
            if not pieces:
                continue
            merged = {name: np.concatenate([job.read(name, p0, p1) for job, p0, p1 in pieces]) for name in NAMES}
            order = np.lexsort((merged["c"], merged["b"], merged["a"]))
            rows = np.stack([merged[x][order] for x in "abc"], axis=1)
            twice = np.flatnonzero(_order(rows) == 0)
            if twice.size:
                a, b, c = rows[twice[0]].tolist()
                raise GenotileError(
                    f"triple ({a}, {b}, {c}) is listed twice in the triple files; delete them and rerun"
                )
            columns: list = [Cells(ids, rows[:, k]) for k in range(3)]
            # the 8 value columns' texts on threads (numpy's sort and the compiled formatter
            # release the GIL): one thread formatted ~1e6 triples' values in ~9 s
            columns += list(texts.map(text_column, [merged[col][order] for col in ccc3.COLUMNS]))
            yield columns

    with ThreadPoolExecutor(min(len(ccc3.COLUMNS), usable_cpus()), thread_name_prefix="genotile-text") as texts:
        rows = write_tsv_gz_parts(out_path, ("id1", "id2", "id3", *ccc3.COLUMNS), parts())
    jobs = [{"file": job.path, "sha256": job.digest, **job.meta} for job in files]
    return {"triples_passing": rows, "jobs": jobs}


def _ranges(per_a: np.ndarray, rows: int) -> np.ndarray:
    """Bounds 0 = x_0 < x_1 < ... < x_r = n: each range [x_k, x_k+1) of id1 holds at most `rows`
    triples, or a single id1."""
    cum = np.cumsum(per_a)
    bounds, start = [0], 0
    while start < per_a.size:
        base = cum[start - 1] if start else 0
        end = max(start + 1, int(np.searchsorted(cum, base + rows, side="right")))
        bounds.append(min(end, per_a.size))
        start = bounds[-1]
    return np.array(bounds, np.int64)


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
