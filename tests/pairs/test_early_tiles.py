"""Tiles computed by the store job and moved into place by their tile jobs (config
`tiles_in_store`, pairs/early.py): the same outputs, byte for byte, as tile jobs computing them;
a tile of other settings is never adopted."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from snakerun import random_alignment, snakemake, write_fasta

from genotile import pipeline
from genotile.pairs import early

OUTPUTS = ("pairs.tsv.gz", "histogram.tsv", "matrix.tsv")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("early") / "aln.fa"
    write_fasta(path, random_alignment(np.random.default_rng(7), 23, 40))
    return path


def config(source, tiles_in_store, threshold=9) -> dict:
    return {
        "datasets": {"d": {"input": str(source), "metrics": ["snp", "hamming"]}},
        "thresholds": {"snp": threshold, "hamming": threshold},
        "block_size": 8,  # 3 blocks: 6 tiles a metric
        "backend": "numpy",
        "tiles_in_store": tiles_in_store,
    }


def test_store_job_tiles_give_the_same_outputs(tmp_path, source):
    (tmp_path / "early").mkdir()
    (tmp_path / "jobs").mkdir()
    snakemake(tmp_path / "early", config(source, True))
    snakemake(tmp_path / "jobs", config(source, False))
    for metric in ("snp", "hamming"):
        for name in OUTPUTS:
            got = (tmp_path / "early" / "results" / "d" / metric / name).read_bytes()
            assert got == (tmp_path / "jobs" / "results" / "d" / metric / name).read_bytes(), (metric, name)
        logs = sorted((tmp_path / "early" / "logs" / "d" / metric).glob("tile_*.log"))
        assert len(logs) == 6 and all("computed by the store job" in log.read_text() for log in logs)
        computed = [log.read_text() for log in (tmp_path / "jobs").rglob("tile_*.log")]
        assert computed and not any("computed by the store job" in text for text in computed)
    store_logs = sorted((tmp_path / "early" / "logs" / "d").glob("store.*.log"))  # snp's and hamming's stores
    assert len(store_logs) == 2 and all("for 6 tile(s)" in log.read_text() for log in store_logs)
    # every early tile was moved into place: none is left beside the store
    assert not list((tmp_path / "early" / "results" / "d" / "store").rglob("*.npz"))


def test_a_changed_threshold_is_computed_not_adopted(tmp_path, source):
    """After a run whose store computed the tiles, a new threshold reruns the tile jobs (their
    params changed), not the store: they compute, and the outputs are a fresh run's."""
    snakemake(tmp_path, config(source, True))
    snakemake(tmp_path, config(source, True, threshold=5))
    ref = tmp_path / "ref"
    pipeline.run_all(source, ref, ["snp"], block_size=8, thresholds={"snp": 5}, backend="numpy")
    for name in OUTPUTS:
        assert (tmp_path / "results" / "d" / "snp" / name).read_bytes() == (ref / "snp" / name).read_bytes(), name


def early_tile(tmp_path, settings: dict):
    """A store manifest and an early tile (i, j) = (0, 1) of snp recorded with `settings`."""
    manifest = tmp_path / "store" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"input_sha256": "ab", "plan": {"n_vectors": 3}, "ids": ["a", "b", "c"]}))
    tile = early.tile_path(manifest.parent, "snp", 0, 1)
    tile.parent.mkdir(parents=True)
    tile.write_bytes(b"tile")
    tile.with_suffix(".json").write_text(json.dumps(early.adoption_record(early.store_digest(manifest), **settings)))
    return manifest, tile


SETTINGS = {"threshold": 0.5, "dense": True, "backend": "auto", "metric_params": {}}


@pytest.mark.parametrize(
    "change",
    [{}, {"threshold": 0.25}, {"threshold": None}, {"dense": False}, {"backend": "numpy"}, {"metric_params": {"x": 1}}],
)
def test_adopts_only_a_tile_of_its_own_settings(tmp_path, change):
    manifest, tile = early_tile(tmp_path, SETTINGS)
    out = tmp_path / "pairs" / "tile_0_1.npz"
    out.parent.mkdir()
    adopted = early.adopt(manifest, "snp", 0, 1, {**SETTINGS, **change}, out)
    assert adopted == (not change)
    assert out.exists() == adopted and not tile.exists() and not tile.with_suffix(".json").exists()
    if adopted:
        assert out.read_bytes() == b"tile"


def test_a_tile_param_the_record_lacks_is_not_adopted(tmp_path):
    """A param the tile rule gains (scripts/tile.py passes every one to pairs_stage.tile and to adopt)
    that the store job did not record: its tile is computed, not adopted."""
    manifest, tile = early_tile(tmp_path, SETTINGS)
    out = tmp_path / "tile.npz"
    assert not early.adopt(manifest, "snp", 0, 1, {**SETTINGS, "new_param": 1}, out)
    assert not out.exists() and not tile.exists()


def test_adopts_nothing_of_another_store_or_tile(tmp_path):
    manifest, tile = early_tile(tmp_path, SETTINGS)
    out = tmp_path / "tile.npz"
    assert not early.adopt(manifest, "snp", 1, 1, SETTINGS, out)  # no such early tile
    assert not early.adopt(manifest, "hamming", 0, 1, SETTINGS, out)
    # the store was rebuilt: same input and plan, other IDs (say, another `samples:` list)
    manifest.write_text(json.dumps({"input_sha256": "ab", "plan": {"n_vectors": 3}, "ids": ["a", "b", "d"]}))
    assert not early.adopt(manifest, "snp", 0, 1, SETTINGS, out)
    assert not out.exists() and not tile.exists()


def test_a_run_adopts_no_tile_left_by_an_earlier_one(tmp_path, source):
    """Tiles left beside a store (a run stopped after its store job: `--until store`) are cleared
    as the next run starts; its tile jobs compute, and the outputs are unchanged."""
    snakemake(tmp_path, config(source, True), "--until", "store")
    assert len(list((tmp_path / "results" / "d" / "store").rglob("early/*/*.npz"))) == 12
    snakemake(tmp_path, config(source, True))
    logs = list((tmp_path / "logs" / "d").rglob("tile_*.log"))
    assert len(logs) == 12 and not any("computed by the store job" in log.read_text() for log in logs)
    assert not list((tmp_path / "results" / "d" / "store").rglob("*.npz"))
    ref = tmp_path / "ref"
    pipeline.run_all(source, ref, ["snp"], block_size=8, thresholds={"snp": 9}, backend="numpy")
    for name in OUTPUTS:
        assert (tmp_path / "results" / "d" / "snp" / name).read_bytes() == (ref / "snp" / name).read_bytes(), name


def _has_gpu() -> bool:
    from genotile.backends.cuda import cupy_common

    return cupy_common.has_gpu()


@pytest.mark.skipif(not _has_gpu(), reason="no CUDA GPU / CuPy: tiles_in_store auto computes nothing early here")
def test_auto_on_a_gpu_machine(tmp_path, source):
    """The default (`auto`) on a local GPU run: the store job, given the GPU, computes every tile on
    it and the tile jobs adopt them; outputs equal those of tile jobs that compute."""
    for name, mode in (("auto", "auto"), ("jobs", False)):
        (tmp_path / name).mkdir()
        cfg = {**config(source, mode), "backend": "auto"}
        snakemake(tmp_path / name, cfg, "--resources", "gpu=1")
    logs = list((tmp_path / "auto" / "logs" / "d").glob("store.*.log"))
    assert logs and all("for 6 tile(s)" in log.read_text() for log in logs)
    for metric in ("snp", "hamming"):
        summary = json.loads((tmp_path / "auto" / "results" / "d" / metric / "summary.json").read_text())
        assert summary["backend"] == ["cupy-b1"], summary["backend"]
        for name in OUTPUTS:
            got = (tmp_path / "auto" / "results" / "d" / metric / name).read_bytes()
            assert got == (tmp_path / "jobs" / "results" / "d" / metric / name).read_bytes(), (metric, name)


def _append_in_a_worker(tmp_path, *extra):
    """Records appended to a FASTA and the workflow run again with `extra`: the store job counts
    the new tiles in its forked worker (its log says "on 1 GPUs"), their jobs adopt them, and the
    outputs are a fresh run's on the grown file."""
    records = random_alignment(np.random.default_rng(11), 30, 40)
    fasta = tmp_path / "grow" / "aln.fa"
    fasta.parent.mkdir()
    write_fasta(fasta, records[:24])
    cfg = {**config(fasta, "auto"), "backend": "auto"}
    snakemake(tmp_path / "grow", cfg, "--resources", "gpu=1", *extra)
    write_fasta(fasta, records)  # 6 records appended
    snakemake(tmp_path / "grow", cfg, "--resources", "gpu=1", *extra)
    logs = [log.read_text() for log in (tmp_path / "grow" / "logs" / "d").glob("store.*.log")]
    assert logs and all("vectors appended to 24" in text and "on 1 GPUs" in text for text in logs), logs
    (tmp_path / "fresh").mkdir()
    write_fasta(tmp_path / "fresh" / "aln.fa", records)
    snakemake(tmp_path / "fresh", {**cfg, **config(tmp_path / "fresh" / "aln.fa", False)}, "--resources", "gpu=1")
    for metric in ("snp", "hamming"):
        for name in OUTPUTS:
            got = (tmp_path / "grow" / "results" / "d" / metric / name).read_bytes()
            assert got == (tmp_path / "fresh" / "results" / "d" / metric / name).read_bytes(), (metric, name)


@pytest.mark.skipif(
    not _has_gpu(),
    reason="no CUDA GPU / CuPy: the worker's tiles on a GPU (its path without one: test_an_append_granted_one_gpu_...)",
)
def test_an_append_on_one_gpu_counts_its_tiles_in_a_worker_with_a_fresh_runs_outputs(tmp_path):
    """On one GPU, a store job that may be appended to counts its tiles in a worker process
    (early.ForkedWorker, forked first thing in the job), which imports CuPy while the job
    reads the new records: the appended records' tiles alone, computed there and adopted by
    their jobs; the outputs are a fresh run's on the grown file."""
    _append_in_a_worker(tmp_path)


def test_an_append_granted_one_gpu_forks_its_worker_on_any_machine(tmp_path):
    """The same path wherever the store job is granted one GPU (here by `--set-resources`, on a
    machine that may have none): the worker is forked first thing in scripts/store.py and counts
    the new tiles (on the CPU where CuPy made no context), the outputs a fresh run's."""
    _append_in_a_worker(tmp_path, "--set-resources", "store:gpu=1")


def test_tiles_shared_out_among_devices_equal_those_computed_in_turn(tmp_path, source):
    """A store job granted several GPUs shares its tiles out among a worker process each
    (early.DevicePool); here two workers on the numpy backend stand for two GPUs (each is given
    its own CUDA_VISIBLE_DEVICES): every tile and record is the one computed in the job itself."""
    from genotile.io.tilefile import read_tile
    from genotile.settings import tile_settings
    from genotile.store import stage

    cfg = {**config(source, True), "dense_max": 100}
    made = {}
    for name in ("turn", "pool"):
        store_dir = tmp_path / name / "store"
        plan = stage.store(source, "nucleotide", tmp_path / name / "ingest.json", store_dir, 8, 1)
        settings = {m: tile_settings(cfg, m, plan) for m in ("snp", "hamming")}
        pool = early.DevicePool(["0", "1"]) if name == "pool" else None
        try:
            assert early.compute_tiles(store_dir, plan, settings, gpu_only=False, pool=pool) > 0
            if pool is not None:  # each worker took one of the two devices
                assert sorted(device for device, _ in (f.result() for f in pool.started)) == ["0", "1"]
        finally:
            if pool is not None:
                pool.close()
        made[name] = sorted((store_dir / early.EARLY_DIR).rglob("tile_*.npz"))
        assert len(made[name]) == 12
    for a, b in zip(made["turn"], made["pool"], strict=True):
        assert a.relative_to(tmp_path / "turn") == b.relative_to(tmp_path / "pool")
        arrays_a, meta_a, _ = read_tile(a)
        arrays_b, meta_b, _ = read_tile(b)
        assert arrays_a.keys() == arrays_b.keys() and meta_a["tile"] == meta_b["tile"]
        assert all(np.array_equal(arrays_a[k], arrays_b[k], equal_nan=True) for k in arrays_a)
        assert a.with_suffix(".json").read_text() == b.with_suffix(".json").read_text()


@pytest.mark.parametrize(
    ("make", "devices"), [("early.DevicePool(['0', '1'])", ["0", "1"]), ("early.ForkedWorker()", None)]
)
def test_device_workers_do_not_run_the_main_script_again(tmp_path, make, devices):
    """A spawned worker runs its parent's main script again unless it is hidden: the store job's
    is Snakemake's script of the whole store job. The script below counts its own runs. A forked
    worker (an append's, scripts/store.py) takes its GPU as spawned ones do, and each worker says
    whether CuPy made its context (`gpus_ready`: here where there is a GPU)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "job.py"
    runs = tmp_path / "runs"
    script.write_text(
        "import os\n"
        f"open({str(runs)!r}, 'a').write('run\\n')\n"
        "from genotile.pairs import early\n"
        f"pool = {make}\n"
        "print(sorted(device for device, _ in (f.result() for f in pool.started)), pool.devices, pool.gpus_ready())\n"
        "pool.close()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True, env=env
    )
    taken = devices or ["0"]  # forked: the first GPU, the host's 0 without CUDA_VISIBLE_DEVICES
    assert proc.stdout.strip() == f"{taken!r} {taken!r} {_has_gpu()}"
    assert runs.read_text() == "run\n"  # the parent's run only


@pytest.mark.parametrize(
    ("data", "gpus", "may", "record", "pool"),
    [
        (["aln.fa"], 1, True, True, True),  # the rule's input: a list, of one file too
        ("aln.fa", 1, True, True, True),
        (["aln.fa", "more.fa"], 1, True, True, False),  # a list input: store/listed.py, no worker
        (["aln.fa"], 2, True, True, False),  # several GPUs: a pool of their own (scripts/store.py)
        (["aln.fa"], 1, False, True, False),  # the job may not compute tiles
        (["aln.fa"], 1, True, False, False),  # no append record: a fresh store
    ],
)
def test_an_append_on_one_gpu_starts_its_worker_only_where_it_may_count_its_tiles(
    tmp_path, monkeypatch, data, gpus, may, record, pool
):
    """early.one_gpu_worker, on any machine: the one GPU's worker started for an all-pairs store
    that may be appended to, of one file, whose job may compute tiles on the one GPU it was
    granted (the rule's one-file input is a list: Session 24 found a check of `str` that started
    no worker)."""
    from genotile.store import append

    started = []
    monkeypatch.setattr(early, "ForkedWorker", lambda warm=None: started.append("forked") or "pool")
    if record:
        (tmp_path / append.RECORD).write_text("{}")
    got = early.one_gpu_worker(tmp_path, data, gpus, may)
    assert (got, started) == (("pool", ["forked"]) if pool else (None, []))


@pytest.mark.parametrize(("gpus", "may", "pool"), [(1, True, True), (2, True, False), (1, False, False)])
def test_a_query_store_on_one_gpu_starts_its_worker_without_an_append_record(tmp_path, monkeypatch, gpus, may, pool):
    """early.one_gpu_worker for a query's store (`query`): its worker on the one GPU the job was
    granted, whatever its input files and records (its cross tiles are few, beside its read)."""
    started = []
    monkeypatch.setattr(early, "ForkedWorker", lambda warm=None: started.append("forked") or "pool")
    got = early.one_gpu_worker(tmp_path, ["new.fa", "more.fa"], gpus, may, query=True)
    assert (got, started) == (("pool", ["forked"]) if pool else (None, []))


@pytest.mark.parametrize(("visible", "first"), [(None, "0"), ("3,1", "3"), ("GPU-5f2e", "GPU-5f2e")])
def test_a_forked_pools_gpu_is_the_first_the_job_may_use(monkeypatch, visible, first):
    """early.first_gpu, the forked worker's GPU and its pool's `devices`: gpu_slots.visible_gpus'
    first (the host's GPU 0 where CUDA_VISIBLE_DEVICES is unset)."""
    from genotile.runtime import gpu_slots

    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        monkeypatch.setattr(gpu_slots, "host_gpu_count", lambda: 2)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert early.first_gpu() == first == gpu_slots.visible_gpus()[0]


@pytest.mark.parametrize(
    ("make", "pids"),
    [
        ("early.DevicePool(['0'])", "[p.pid for p in pool.executor._processes.values()]"),
        ("early.ForkedWorker()", "[pool.pid]"),
    ],
)
def test_a_pools_workers_end_with_a_killed_job(tmp_path, make, pids):
    """A store job killed (SIGKILL) leaves no worker behind waiting for a task, with its CUDA
    context: each ends within a second (a DevicePool's: early._end_with; a ForkedWorker's: its end
    of the pipe closes). Without the watch a forked worker lived on (Session 24), and kept this
    test's pipes open."""
    import time

    status, out = _run_job(
        tmp_path,
        "import os, signal\n"
        "from genotile.pairs import early\n"
        f"pool = {make}\n"
        "[f.result() for f in pool.started]\n"
        f"print(*{pids}, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n",
    )
    assert status == -9, out
    workers = [int(pid) for pid in out.split()]
    assert len(workers) == 1

    deadline = time.monotonic() + 5  # each watches its job twice a second, or reads its end of the pipe
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)


def test_a_job_ends_without_waiting_for_its_forked_workers_end(tmp_path):
    """A ForkedWorker's job goes on once it has closed the worker, and ends, while the worker
    still finishes the task in hand (here a 3 s sleep, as a CUDA context's teardown of 0.1-0.2 s
    on the H100 machine); the worker then ends on its own. A DevicePool's close waits for its
    workers' ends."""
    import os
    import subprocess
    import sys
    import time

    script = tmp_path / "job.py"
    script.write_text(
        "import time\n"
        "from genotile.pairs import early\n"
        "pool = early.ForkedWorker()\n"
        "pool.started[0].result()\n"
        "assert pool.submit(divmod, 7, 2).result() == (3, 1)\n"
        "pool.submit(time.sleep, 3)\n"
        "pool.close()\n"
        "print(pool.pid, flush=True)\n"
        "from genotile.runtime.rule import leave\n"
        "leave()\n"  # as a store job ends (scripts/store.py: runtime/rule.run_rule)
    )
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    out = tmp_path / "out"
    with open(out, "w") as fh:  # not a pipe: the worker holds the job's standard streams
        begun = time.monotonic()
        job = subprocess.Popen([sys.executable, str(script)], stdout=fh, stderr=subprocess.STDOUT, env=env)
        assert job.wait(timeout=60) == 0, out.read_text()
        took = time.monotonic() - begun
    worker = int(out.read_text().split()[-1])
    assert _alive(worker), "the worker ended before its task did"
    assert took < 2.5, f"the job waited for its worker: {took:.2f} s"
    deadline = time.monotonic() + 15
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker)


def test_a_forked_worker_ends_once_told_while_its_job_goes_on(tmp_path):
    """A closed ForkedWorker ends by itself while its job is still there (its stop message, not
    the job's end), and the job's thread collects its exit status: no zombie left to the job."""

    status, out = _run_job(
        tmp_path,
        "import os, time\n"
        "from genotile.pairs import early\n"
        "pool = early.ForkedWorker()\n"
        "pool.started[0].result()\n"
        "pool.close()\n"
        "deadline = time.monotonic() + 15\n"
        "while os.path.exists(f'/proc/{pool.pid}') and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print('gone' if not os.path.exists(f'/proc/{pool.pid}') else 'left', flush=True)\n",
    )
    assert status == 0, out
    assert out.split()[-1] == "gone"


def test_a_forked_workers_warm_up_tile_is_counted_from_the_kept_earlier_store(tmp_path, source, monkeypatch):
    """early.WarmTile: a tile of the earlier store's first rows, (rows - cols) x cols, read from the
    links an append keeps beside the store (Snakemake removes the store's own files before the job
    runs), counted for each 2-way metric of the store's encoding that has a threshold, with the
    tile rule's settings and no dense block, its result dropped; none where a task waits
    (`stop`), nothing where nothing was kept."""
    import contextlib
    import shutil

    from genotile.pairs import tile as tile_module
    from genotile.settings import tile_settings
    from genotile.store import append

    shutil.copy(source, tmp_path / "data.fa")
    with contextlib.chdir(tmp_path):
        append.store("data.fa", "nucleotide", "ingest.json", "store", 8, 1)
    n = len(np.load(tmp_path / "store" / "perm.npy"))
    for name in ("plan.json", "perm.npy", "planes.npy", "manifest.json"):  # as Snakemake does
        (tmp_path / "store" / name).unlink()
    cfg = {**config(source, True), "dense_max": 100}  # the schema's keys the tile settings read
    counted = []
    real = tile_module.compute_tile

    def counting(*args):
        arrays, meta = real(*args)  # counted in full, then recorded
        counted.append((args, meta))
        return arrays, meta

    monkeypatch.setattr(tile_module, "compute_tile", counting)
    monkeypatch.setattr(early.WarmTile, "COLS", 5)
    settings = lambda metric, plan: tile_settings(cfg, metric, plan)  # noqa: E731
    warm = early.WarmTile(tmp_path / "store", "nucleotide", ("snp", "ibs", "hamming"), settings)
    assert warm._count() == 1  # hamming's store is categorical, ibs's genotype
    ((args, meta),) = counted
    _, layout, _, plan, metric, bi, bj, threshold, dense, backend = args
    assert (metric.name, plan.n_vectors, plan.block(0), plan.block(1), bi, bj) == (
        "snp",
        n,
        slice(0, n - 5),
        slice(n - 5, n),
        0,
        1,
    )
    assert (threshold, dense, backend) == (cfg["thresholds"]["snp"], False, cfg["backend"])
    assert meta["pairs_computed"] == (n - 5) * 5
    assert warm._count(stop=lambda: True) == 0  # the job's first task waits: it goes first
    without = lambda metric, plan: {**tile_settings(cfg, metric, plan), "threshold": None}  # noqa: E731
    assert early.WarmTile(tmp_path / "store", "nucleotide", ("snp",), without)._count() == 0  # every pair kept
    assert early.WarmTile(tmp_path / "none", "nucleotide", ("snp",), settings)._count() == 0


def test_a_forked_workers_failures_reach_the_job(tmp_path):
    """What a task raises in a ForkedWorker is the future's exception in the job, its traceback in
    the worker the exception's cause; a reply that does not pickle is said in words; the worker
    serves the next task after either; once it has been closed it takes none."""

    status, out = _run_job(
        tmp_path,
        "import threading\n"
        "from genotile.pairs import early\n"
        "pool = early.ForkedWorker()\n"
        "failed = pool.submit(int, 'x').exception()\n"
        "print(type(failed).__name__, 'int(' in str(failed.__cause__))\n"
        "print(type(pool.submit(threading.Lock).exception()).__name__)\n"
        "print(pool.submit(max, 3, 4).result())\n"
        "pool.close()\n"
        "try:\n"
        "    pool.submit(max, 1, 2)\n"
        "except RuntimeError as exc:\n"
        "    print(exc)\n",
    )
    assert status == 0, out
    assert out.splitlines()[-4:] == ["ValueError True", "RuntimeError", "4", "the GPU worker was closed"]


def _run_job(tmp_path, text: str) -> tuple[int, str]:
    """(exit status, output) of `text` run as a job's script in a fresh interpreter without
    CUDA_VISIBLE_DEVICES (a forked worker takes the host's GPU 0), its output to a file, not a
    pipe read to its end: the workers hold the job's standard streams."""
    import os
    import subprocess
    import sys

    script, out = tmp_path / "job.py", tmp_path / "out"
    script.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    with open(out, "w") as fh:
        proc = subprocess.run([sys.executable, str(script)], stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=60)
    return proc.returncode, out.read_text()


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie not reaped yet, as a container's init may leave it, has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class _Pool:
    def __init__(self, devices):
        self.devices = devices


@pytest.mark.parametrize(
    ("devices", "slot", "kept"),
    [
        (["0"], "0", True),
        (["3"], " 3", True),  # gpu_slot yields CUDA_VISIBLE_DEVICES as it is where it names one GPU
        (["0"], "1", False),  # the job saw several GPUs and took the first free one: not the worker's
        (["0"], None, True),  # no slot taken (a CPU backend): nothing to compare
    ],
)
def test_an_appends_worker_is_kept_only_on_the_jobs_gpu_slot(devices, slot, kept):
    """early.on_slot: scripts/store.py closes an append's forked worker and counts the tiles
    itself where the GPU slot it took is not the worker's GPU (`--resources gpu=1` on a host of
    several, GPU 0 busy)."""
    assert early.on_slot(_Pool(devices), slot) is kept


def test_an_appends_few_new_tiles_are_computed_by_the_store_job_and_much_work_is_left_to_the_tile_jobs(tmp_path):
    from genotile.core.plan import Plan

    np.save(tmp_path / "planes.npy", np.zeros((1, 160), np.uint64))
    small = Plan(14_533, 7_167, 1, segments=(199,))  # the 15,800 + 200: 3 new tiles, 0.03 s on numba
    assert small.appended_tiles() == [(0, 2), (1, 2), (2, 2)]
    assert early.few_appended(tmp_path, small, small.appended_tiles())
    big = Plan(400_000, 100_000, 1, segments=(200_000,))  # 2 x 10^10 pairs: the tile jobs'
    assert not early.few_appended(tmp_path, big, big.appended_tiles())
    many = Plan(20_000, 1_000, 1, segments=(1_000,))  # 21 new tiles: more than EARLY_TILES_MAX
    assert not early.few_appended(tmp_path, many, many.appended_tiles())


def test_a_tile_the_store_job_computed_takes_no_gpu(tmp_path, source):
    """Its job only moves the file (adopt), so it does not hold the `gpu` resource: on a host of
    one GPU the tile jobs would otherwise wait for one another. Forced here with `tile_gpu: true`
    (every tile job asks for one) and a `gpu` bound of 1: the store job computed all 6 tiles, and
    every tile job ran with gpu=0."""
    cfg = {**config(source, True), "tile_gpu": True}
    cfg["datasets"]["d"]["metrics"] = ["snp"]
    proc = snakemake(tmp_path, cfg, "--resources", "gpu=1")
    jobs = tile_job_resources(proc.stdout + proc.stderr)
    assert len(jobs) == 6 and all(re.search(r"\bgpu=0\b", job) for job in jobs), jobs
    logs = sorted((tmp_path / "logs" / "d" / "snp").glob("tile_*.log"))
    assert len(logs) == 6 and all("computed by the store job" in log.read_text() for log in logs)


def test_a_tile_job_with_nothing_left_asks_for_its_gpu(tmp_path, source):
    """The same config, the store job computing no tile (`tiles_in_store: false`): each tile job
    keeps the gpu=1 its `tile_gpu` asks for."""
    cfg = {**config(source, False), "tile_gpu": True, "backend": "numpy"}
    cfg["datasets"]["d"]["metrics"] = ["snp"]
    proc = snakemake(tmp_path, cfg, "--resources", "gpu=1")
    jobs = tile_job_resources(proc.stdout + proc.stderr)
    assert len(jobs) == 6 and all(re.search(r"\bgpu=1\b", job) for job in jobs), jobs


def tile_job_resources(log: str) -> list[str]:
    """The `resources:` line of each tile job Snakemake's log shows."""
    return re.findall(r"rule tile:\n(?:    (?!resources:).*\n)*    resources: (.*)", log)
