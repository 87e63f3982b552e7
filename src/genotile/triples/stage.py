"""The triples stage (ccc3) as plain functions over paths: what rules/triples.smk runs, and what
`genotile run` chains in one process (pipeline.run_ccc3). The store it reads (ingest, plan,
pack of `genotype_t`, store/stage.py) is the one ccc2 reads."""

import logging
import shutil
import time
from pathlib import Path

from genotile.core import ccc3
from genotile.core.limits import check_plan, check_threshold
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.io.stale import remove_stale_files
from genotile.store.manifest import STORE_KEYS, store_identity
from genotile.store.pack import open_store
from genotile.store.sources import tree_files
from genotile.triples.merge import merge_triples, write_summary
from genotile.triples.runs import write_job
from genotile.triples.tile import iter_triples, job_meta
from genotile.util.readback import load_json, load_permutation

log = logging.getLogger("genotile")


def ccc3_block_size(block_size, words: int) -> int:
    """ccc3's block size: as given, or for "auto" (jobs on a GPU: settings.ccc3_plan_settings)
    ccc3.GPU_BLOCK_SIZE where a fused kernel takes planes of `words` words within sm_90's shared
    memory (backends/cuda/ccc3_fused.kernel_for: the resident one, or the streamed one for wider
    planes), else ccc3.CPU_BLOCK_SIZE: the select path's batches grow as the block squared, and
    it computes a diagonal block triple whole.

    >>> ccc3_block_size(1000, 32), ccc3_block_size("auto", 32), ccc3_block_size("auto", 313)
    (1000, 32768, 32768)
    """
    if block_size != "auto":
        return int(block_size)
    from genotile.backends.cuda.ccc3_fused import kernel_for

    return ccc3.GPU_BLOCK_SIZE if kernel_for(words) else ccc3.CPU_BLOCK_SIZE


def store_words(manifest_path) -> int:
    """A genotype_t store's plane words (its manifest's layout): what resolves a ccc3 block_size
    of "auto" (`ccc3_block_size`) where the plan is made from the store's plan alone."""
    return int(load_json(manifest_path, "store manifest", ("layout",))["layout"]["words"])


def plan3(manifest: dict, block_size: int | str, stages: int) -> ccc3.Plan3:
    """The ccc3 plan over a store: its vectors and permutation seed, ccc3's own blocks and stages.

    Parameters
    ----------
    manifest : dict
        The genotype_t store manifest (its plan gives n_vectors and seed).
    block_size, stages : int
        `ccc3: block_size` (or "auto": `ccc3_block_size` by the store's planes) and `ccc3: stages`.

    Returns
    -------
    ccc3.Plan3
    """
    size = ccc3_block_size(block_size, int(manifest["layout"]["words"]))
    return ccc3.Plan3.from_plan(Plan.from_json(manifest["plan"]), size, stages)


def plan_triples(
    store_plan: Plan, block_size: int | str, stages: int, threshold, *, words=None, null_max=None, where=""
) -> ccc3.Plan3:
    """The triples' plan step: ccc3's plan over a store's 2-way plan, held to its bound on
    output (limits.check_plan: a null threshold past `null_max` vectors, default
    ccc3.NULL_THRESHOLD_MAX, is refused). Every ccc3 run plans here: the workflow's plan rule
    and DAG (scripts/plan.py, rules/common.smk), each triple job, `run_ccc3` and `genotile plan`.
    `words`: the store's plane words, which resolve a block_size of "auto" (`ccc3_block_size`)."""
    check_plan(store_plan.n_vectors, [ccc3.NAME], {ccc3.NAME: threshold}, ccc3_null_max=null_max, where=where)
    if block_size == "auto" and words is None:
        raise ValueError("a ccc3 block_size of auto is resolved by the store's plane words: words=")
    return ccc3.Plan3.from_plan(store_plan, ccc3_block_size(block_size, words or 0), stages)


def _size(n: int) -> str:
    """Bytes in words: "12.2 GB", "3.4 MB", "950 bytes"."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:,} bytes"


def check_output_room(plan: ccc3.Plan3, threshold, out_dir, where: str = "") -> None:
    """Refuse a ccc3 run that keeps every triple (a null threshold, or one <= 0: every value is
    >= 0) where its output does not fit the free space under `out_dir` (issue 30: the bundled
    example's 1.4e8 triples took 7.7 minutes and 19 GB). The peak: every job file, then either
    triples.tsv.gz beside them (the merge) or the largest job's spilled runs beside its file
    (triples/runs.py copies them in); the bytes already under `out_dir` (an earlier or a running
    attempt's files) count as written. Not checked once `out_dir`'s triples.tsv.gz exists (a run
    that merged had the room; Snakemake asks again each time it builds its DAG), nor for a
    threshold above 0 (what passes is not known before the jobs run)."""
    if threshold is not None and threshold > 0:
        return
    out = Path(out_dir).absolute()
    if (out / "triples.tsv.gz").exists():
        return
    files, text = plan.n_triples * ccc3.TRIPLE_FILE_BYTES, plan.n_triples * ccc3.TRIPLE_GZ_BYTES
    largest = min(
        plan.n_triples,
        max(
            (plan.block(i).stop - plan.block(i).start)
            * len(plan.stage_rows(j, s))
            * (plan.block(k).stop - plan.block(k).start)
            for i, j, k, s in plan.jobs()
        ),
    )
    written = sum(f.stat().st_size for f in tree_files(out)) if out.is_dir() else 0
    need = files + max(text, largest * ccc3.TRIPLE_FILE_BYTES) - written
    place = out
    while not place.exists() and place != place.parent:  # the folder it will be made in
        place = place.parent
    free = shutil.disk_usage(place).free
    if need > free:
        raise GenotileError(
            f"{where}ccc3 keeping every triple (threshold {threshold if threshold is not None else 'null'}) over "
            f"{plan.n_vectors:,} SNPs writes all {plan.n_triples:,} of them: {_size(files)} of job files and "
            f"{_size(text)} of triples.tsv.gz, {_size(need)} more at its peak, more than the {_size(free)} free "
            f"under {place}; set a ccc3 threshold (the workflow's default is 0.3) or make room"
        )


def triple_path(triples_dir, job) -> Path:
    """`triples_dir/triples_I_J_K_S.npz` of job (I, J, K, S)."""
    i, j, k, s = job
    return Path(triples_dir) / f"triples_{i}_{j}_{k}_{s}.npz"


def triple_paths(triples_dir, plan: ccc3.Plan3) -> list[Path]:
    """Every job file of the plan, in `plan.jobs()` order."""
    return [triple_path(triples_dir, job) for job in plan.jobs()]


def triple_job(
    planes,
    manifest_path,
    perm_path,
    bi,
    bj,
    bk,
    stage,
    *,
    block_size,
    stages,
    threshold,
    params=None,
    backend="auto",
    out,
    null_max: int = ccc3.NULL_THRESHOLD_MAX,
) -> dict:
    """One ccc3 job: block triple (bi, bj, bk), stage `stage` of block bj, to a checksummed file.

    Parameters
    ----------
    planes, manifest_path, perm_path : str or os.PathLike
        The genotype_t store.
    bi, bj, bk : int
        Blocks, bi <= bj <= bk.
    stage : int
        Part of the middle block bj, 0 <= stage < stages.
    block_size, stages : int
        The ccc3 plan's (checked again by the merge).
    threshold : float or None
        Triples kept (any entry >= threshold); None is bounded by `null_max` SNPs.
    params : dict, optional
        multiplier, param.
    backend : str
    out : str or os.PathLike
        The job file: a, b, c (int64 (t,), a < b < c in input order), ccc_000 ... ccc_111
        (float64 (t,)), meta and SHA-256.

    Returns
    -------
    dict
        The job's meta (triples computed and passing, backend, seconds, store identity).
    """
    check_threshold(threshold, "threshold of ccc3")
    planes_mm, manifest, layout = open_store(planes, manifest_path)
    plan = plan_triples(
        Plan.from_json(manifest["plan"]),
        block_size,
        stages,
        threshold,
        words=int(manifest["layout"]["words"]),
        null_max=null_max,
    )
    prm = ccc3.Params.make(**(params or {}))
    perm = load_permutation(perm_path, plan.n_vectors)
    log.info(
        "ccc3 job (%d, %d, %d) stage %d of %d: %d middle vectors, %d fields, counting...",
        bi,
        bj,
        bk,
        stage,
        stages,
        len(plan.stage_rows(int(bj), int(stage))),
        manifest["n_kept"],
    )
    t0 = time.perf_counter()
    info: dict = {}
    job = (int(bi), int(bj), int(bk))
    chunks = iter_triples(planes_mm, layout, perm, plan, prm, *job, int(stage), threshold, backend, info)

    def make_meta() -> dict:
        meta = job_meta(plan, prm, job, int(stage), threshold, info)
        return {**meta, "store": store_identity(manifest), "seconds_total": time.perf_counter() - t0}

    meta = write_job(out, chunks, make_meta)
    log.info(
        "ccc3 job (%d, %d, %d) stage %d: %d triples, %d pass, counts %.3f s on %s, %.3f s in all",
        bi,
        bj,
        bk,
        stage,
        meta["triples_computed"],
        meta["triples_passing"],
        meta["seconds_counts"],
        meta["backend"],
        meta["seconds_total"],
    )
    return meta


def merge(paths, manifest_path, *, block_size, stages, triples_out, summary_out, config: dict, params=None) -> dict:
    """triples.tsv.gz and summary.json from every job file of the plan (triples/merge.py).

    Parameters
    ----------
    paths : sequence of str or os.PathLike
        Every job file (refused when one is missing, foreign, repeated or damaged).
    manifest_path : str or os.PathLike
        The genotype_t store manifest.
    block_size, stages : int
        The ccc3 plan the files must have been computed with.
    triples_out, summary_out : str or os.PathLike
    config : dict
        Recorded in summary.json.
    params : dict, optional
        multiplier, param the files must have been computed with.

    Returns
    -------
    dict
        The summary written.
    """
    started = time.perf_counter()
    manifest = load_json(manifest_path, "store manifest", STORE_KEYS)
    plan = plan3(manifest, block_size, stages)
    prm = ccc3.Params.make(**(params or {}))
    merged = merge_triples(
        paths,
        manifest["ids"],
        plan,
        triples_out,
        store_identity(manifest),
        {"multiplier": prm.multiplier, "param": prm.param},
        load_permutation(Path(manifest_path).parent / "perm.npy", plan.n_vectors),
        {"threshold": config["threshold"]} if "threshold" in config else {},
    )
    summary = write_summary(
        summary_out,
        manifest=manifest,
        plan=plan,
        merged=merged,
        outputs={"triples": triples_out},
        config=config,
        started=started,
    )
    log.info("ccc3 merge: %d of %d triples pass", summary["triples_passing"], summary["triples_computed"])
    if paths:  # job files of an earlier plan (another block size, stages or input)
        remove_stale_files(Path(paths[0]).parent, r"triples_\d+_\d+_\d+_\d+\.npz", paths)
    return summary
