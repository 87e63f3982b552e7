"""The example workflow on a real SLURM, run as users type it: `snakemake --profile slurm`.

Needs a running SLURM and snakemake-executor-plugin-slurm; skipped (with the reason) otherwise.
`.ci/slurm.sh start` makes one on this machine: one node, two fake GPUs (`start --no-gpu`: none),
no accounting database (job states come from squeue); `.ci/run` starts it for these tests and
stops it afterwards. Where that cluster runs, these tests start it again without GPUs for the
CPU-cluster test, and with them again at the end.

Every run is `snakemake --profile slurm` from the repo root, with a site profile in a temporary
`$XDG_CONFIG_HOME/snakemake/slurm` and the workflow profile profiles/default read by Snakemake itself
(plus `--directory`/`--configfile` for where to work, and the test cluster's status settings):

- GPU cluster, site profile = the shipped profiles/slurm installed by the README's one-line copy:
  the example config gives byte for byte the outputs of a local run; tiles go `tiles_per_job` to a
  SLURM job; tile jobs asked SLURM for one GPU and got one, the other jobs asked for none;
- a tile job cancelled mid-run (`scancel`, as a lost node would) fails the run; the rerun
  recomputes only what is missing and ends with the same outputs;
- CPU-only cluster, a minimal site profile (executor and partition only), `backend: auto`: no job
  asks SLURM for a GPU, and the outputs are the local run's.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from snakerun import snakemake_cmd

pytestmark = pytest.mark.slurm  # `pytest -m "not slurm"` leaves it out

REPO = Path(__file__).resolve().parents[2]
CI_SLURM = REPO / ".ci" / "slurm.sh"
CI_SLURM_CONF = Path(os.environ.get("SLURM_STATE", "/tmp/genotile-slurm")) / "slurm.conf"
# The example data has 60 sequences (snp, hamming), 40 samples (ibs, king) and about 900 SNPs
# (ccc2): blocks of 480 give 1 + 1 + 1 + 1 + 3 tiles; 2 tiles a job make 1 + 1 + 1 + 1 + 2 tile jobs.
BLOCK_SIZE = 480
TILES_PER_JOB = 2
RUN_TIMEOUT = 600  # seconds per Snakemake run before the test gives up (and cancels its jobs)
# The test cluster's own settings, not a site profile's: it has no accounting database (sacct), so
# job states come from squeue; checks start 1 s after a submission (the cluster is local).
TEST_CLUSTER = ["--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "1"]


def _sinfo(fields: str) -> list[str]:
    return subprocess.run(
        ["sinfo", "-h", "-o", fields], capture_output=True, text=True, timeout=15, check=True
    ).stdout.splitlines()


def _slurm_unavailable_reason() -> str | None:
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        return "snakemake-executor-plugin-slurm is not installed (pip install -e '.[test]')"
    for tool in ("sinfo", "squeue", "sbatch", "scancel", "scontrol"):
        if shutil.which(tool) is None:
            return f"no SLURM here ({tool} not found; .ci/slurm.sh start makes a one-node cluster)"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%T %G"], capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 15 s (is slurmctld running? .ci/slurm.sh status)"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return f"SLURM is not up (sinfo: {last}); .ci/slurm.sh start makes a one-node cluster"
    # states: idle, mixed, allocated, ...; a trailing * (not responding), ~ (powered off) etc.
    usable = [line for line in proc.stdout.splitlines() if line.split(" ")[0] in USABLE]
    if not usable:
        return f"SLURM has no usable node (sinfo: {proc.stdout.strip()[:200]!r})"
    return None


USABLE = ("idle", "mixed", "allocated", "completing")


def cluster_has_gpus() -> bool:
    """Whether a usable node offers a `gpu` GRES."""
    return any(line.split(" ")[0] in USABLE and "gpu" in line.partition(" ")[2] for line in _sinfo("%T %G"))


def default_partition() -> str:
    return next(line.rstrip("*") for line in _sinfo("%P") if line.endswith("*"))


@pytest.fixture(scope="module")
def slurm():
    reason = _slurm_unavailable_reason()
    if reason and os.environ.get("GENOTILE_REQUIRE_SLURM") == "1":  # set by .ci/run: no silent skip
        pytest.fail(f"GENOTILE_REQUIRE_SLURM=1 but {reason}", pytrace=False)
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def cluster(slurm):
    """`cluster("gpu")` / `cluster("cpu")`: a SLURM with / without GPU nodes, or a skip.

    The one-node cluster of .ci/slurm.sh is started again as the kind wanted (and as it was
    found at the end); any other cluster is used as it is, for the tests of its kind.
    """
    found = cluster_has_gpus()
    ours = CI_SLURM_CONF.is_file() and os.geteuid() == 0

    def want(kind: str):
        gpus = kind == "gpu"
        if cluster_has_gpus() == gpus:
            return
        if not ours:
            pytest.skip(f"the SLURM here has {'no ' if gpus else ''}GPU nodes; this test needs a {kind} cluster")
        flag = [] if gpus else ["--no-gpu"]
        proc = subprocess.run([str(CI_SLURM), "start", *flag], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f".ci/slurm.sh start {' '.join(flag)} failed:\n{proc.stdout}{proc.stderr}"
        assert cluster_has_gpus() == gpus, _sinfo("%P %T %G")

    yield want
    if ours and cluster_has_gpus() != found:
        subprocess.run([str(CI_SLURM), "start", *([] if found else ["--no-gpu"])], capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def cancel_leftovers():
    """Run IDs of this module's Snakemake runs; their SLURM jobs are cancelled at the end."""
    run_ids = []
    yield run_ids
    for run_id in run_ids:
        subprocess.run(["scancel", "--name", run_id], capture_output=True, timeout=30)


def example_config(block_size, tiles_per_job=TILES_PER_JOB) -> dict:
    """config/config.yaml with absolute inputs, the given block size and tiles a job, no report plots."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for spec in config["datasets"].values():
        spec["input"] = str(REPO / spec["input"])
    for spec in config.get("screens", {}).values():
        spec["samples"], spec["signatures"] = str(REPO / spec["samples"]), str(REPO / spec["signatures"])
    config["block_size"] = block_size
    config["tiles_per_job"] = tiles_per_job
    config["tile_threads"] = 1  # two tile jobs at once on a node of 2 CPUs
    if "report" in config:
        config["report"] = False  # the plots: a dozen more jobs, and PNGs are not compared here
    return config


def install_shipped_profile(home: Path) -> Path:
    """Runs the README's one-line install of profiles/slurm with HOME=home; returns the config home."""
    lines = [line for line in (REPO / "README.md").read_text().splitlines() if "cp -r profiles/slurm" in line]
    assert len(lines) == 1, f"the README has no single line installing profiles/slurm: {lines}"
    command = lines[0].split("#", 1)[0].strip()
    env = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"}
    proc = subprocess.run(["bash", "-c", command], cwd=REPO, env={**env, "HOME": str(home)}, capture_output=True)
    assert proc.returncode == 0, f"{command!r} failed: {proc.stderr.decode()}"
    installed = home / ".config" / "snakemake" / "slurm" / "config.yaml"
    assert installed.read_bytes() == (REPO / "profiles" / "slurm" / "config.yaml").read_bytes()
    return home / ".config"


def minimal_site_profile(config_home: Path) -> Path:
    """A site profile that names only the executor and the partition."""
    profile = config_home / "snakemake" / "slurm"
    profile.mkdir(parents=True)
    site = {"executor": "slurm", "default-resources": {"slurm_partition": default_partition()}}
    (profile / "config.yaml").write_text(yaml.safe_dump(site))
    return config_home


def slurm_run_cmd(workdir, config, *extra) -> list[str]:
    """`snakemake --profile slurm` from the repo root, working in `workdir` (the profile comes
    from $XDG_CONFIG_HOME, the workflow profile from profiles/default)."""
    cfg = workdir / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    return [sys.executable, "-m", "snakemake", "--profile", "slurm", "--directory", str(workdir)] + [
        "--configfile",
        str(cfg),
        *TEST_CLUSTER,
        *extra,
    ]


def start_slurm(workdir, config, config_home, *extra, log) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    env["XDG_CONFIG_HOME"] = str(config_home)
    return subprocess.Popen(
        slurm_run_cmd(workdir, config, *extra), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
    )


def run_slurm(workdir, config, config_home, run_ids, *extra) -> tuple[int, str, str]:
    """Runs Snakemake on SLURM to its end; returns (exit status, output, SLURM run ID)."""
    log = workdir / "snakemake.out"
    with open(log, "w") as fh:
        proc = start_slurm(workdir, config, config_home, *extra, log=fh)
        try:
            rc = proc.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            stop(proc)
            run_ids.extend(re.findall(r"SLURM run ID: (\S+)", log.read_text()))
            raise AssertionError(f"snakemake on SLURM ran over {RUN_TIMEOUT} s:\n{tail(log)}") from None
    out = log.read_text()
    assert "Using profiles slurm and workflow specific profile" in out, out[:2000]
    run_id = run_id_of(out)
    run_ids.append(run_id)
    return rc, out, run_id


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # Snakemake cancels its SLURM jobs on SIGINT
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_id_of(out: str) -> str:
    m = re.search(r"SLURM run ID: (\S+)", out)
    assert m, f"no 'SLURM run ID' in Snakemake's output:\n{out[-3000:]}"
    return m.group(1)


def tail(path, n=4000):
    return Path(path).read_text()[-n:]


def failure_report(out: str) -> str:
    """Snakemake's output and the ends of the first failed jobs' SLURM logs (where their errors are)."""
    logs = dict.fromkeys(re.findall(r"(/\S+/slurm_logs/\S+?\.log)\b", out.split("Error in rule", 1)[-1]))
    parts = [out[-4000:]]
    for path in list(logs)[:2]:
        if Path(path).exists():
            parts.append(f"--- {path}\n{tail(path, 1500)}")
    return "\n".join(parts)


def slurm_jobs(run_id) -> list[dict]:
    """Every job SLURM still knows of (finished ones for MinJobAge seconds) of one Snakemake run.

    The executor names every job of a run after the run ID and sets its comment to
    rule_<rule>[_wildcards_<values>]. `request`: what the job asked for (tres-per-job is
    `sbatch --gpus`, tres-per-node `--gres`); `gres`: what SLURM gave it (JOB_GRES).
    """
    out = subprocess.run(
        [
            "squeue",
            "-h",
            "--states=all",
            "--name",
            run_id,
            "-O",
            "JobID:|,Comment:|,State:|,tres-per-job:|,tres-per-node:|",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    jobs = []
    for line in out.splitlines():
        job_id, comment, state, per_job, per_node = line.split("|")[:5]
        detail = subprocess.run(
            ["scontrol", "-o", "-d", "show", "job", job_id], capture_output=True, text=True, timeout=30
        ).stdout
        m = re.search(r"JOB_GRES=(\S+)", detail)
        jobs.append(
            {
                "id": job_id,
                # a group job's comment is rule_<group id>_<rules>: tile groups are tiles_..._tile
                "rule": "tile" if comment.startswith("rule_tiles_") else re.match(r"rule_([A-Za-z0-9]+)", comment)[1],
                "comment": comment,
                "state": state,
                "request": " ".join(r for r in (per_job, per_node) if r not in ("N/A", "(null)", "")),
                "gres": m.group(1) if m and m.group(1) != "(null)" else "",
            }
        )
    return jobs


def final_outputs(workdir: Path) -> dict[str, bytes]:
    """matrix.tsv, pairs.tsv.gz (and histogram.tsv where made) of every dataset and metric, and
    every screen's matches.tsv.gz."""
    results = workdir / "results"
    names = ("matrix.tsv", "pairs.tsv.gz", "histogram.tsv", "matches.tsv.gz")
    files = [p for name in names for p in results.glob(f"*/*/{name}")]
    return {str(p.relative_to(workdir)): p.read_bytes() for p in sorted(files)}


@pytest.fixture(scope="module")
def local_run(slurm, tmp_path_factory):
    """The example config run locally (the reference)."""
    workdir = tmp_path_factory.mktemp("local")
    config = example_config(BLOCK_SIZE)
    proc = subprocess.run(snakemake_cmd(workdir, config, "--cores", "2"), capture_output=True, text=True)
    assert proc.returncode == 0, f"local snakemake failed:\n{proc.stderr[-4000:]}"
    outputs = final_outputs(workdir)
    n_metrics = sum(len(spec["metrics"]) for spec in config["datasets"].values())
    for name in ("matrix.tsv", "pairs.tsv.gz"):
        assert sum(path.endswith(name) for path in outputs) == n_metrics, sorted(outputs)
    return workdir, outputs


@pytest.fixture(scope="module")
def shipped_profile(tmp_path_factory) -> Path:
    """profiles/slurm installed by the README's line: the config home to run with."""
    return install_shipped_profile(tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def slurm_run(cluster, local_run, shipped_profile, cancel_leftovers, tmp_path_factory):
    """The example config run on the GPU cluster with the shipped site profile:
    (workdir, exit status, output, run ID)."""
    cluster("gpu")
    workdir = tmp_path_factory.mktemp("slurm")
    # no retries: every job must succeed the first time (and a broken run fails sooner)
    config = example_config(BLOCK_SIZE)
    return workdir, *run_slurm(workdir, config, shipped_profile, cancel_leftovers, "--retries", "0")


def expected_tile_groups(local_dir: Path, config: dict) -> set[str]:
    """Comments of the SLURM jobs of the tile-like rules, from the tiles of the local run.

    Tile-like jobs go TILES_PER_JOB to a SLURM job (rules/common.smk, job_group), by rank:
    pairs tiles (i, j), i <= j, rank j(j+1)/2 + i; screen tiles (i, j), rank (i+j)(i+j+1)/2 + j.
    """
    expected_groups, n_tiles = set(), 0
    for tile in (local_dir / "results").glob("*/*/*/tile_*.npz"):
        name, kind = f"{tile.parts[-4]}_{tile.parts[-3]}", tile.parts[-2]  # dataset_metric or screen_screen
        if not in_config(tile.relative_to(local_dir), config):
            continue
        i, j = map(int, re.match(r"tile_(\d+)_(\d+)\.npz", tile.name).groups())
        if kind == "pairs":
            rank, rule = j * (j + 1) // 2 + i, "tile"
        else:
            rank, rule = (i + j) * (i + j + 1) // 2 + j, "screen_tile"
        expected_groups.add(f"rule_tiles_{name}_{rank // TILES_PER_JOB}_{rule}")
        n_tiles += 1
    assert len(expected_groups) < n_tiles, "the example makes no group of several tiles"
    return expected_groups


def in_config(path: Path, config: dict) -> bool:
    """Whether results/<name>/<metric or screen>/... is an output of `config`."""
    name, kind = Path(path).parts[1:3]
    if kind == "screen":
        return name in config.get("screens", {})
    return kind in config["datasets"].get(name, {}).get("metrics", [])


def check_run(local_run, config, workdir, rc, out, run_id) -> list[dict]:
    """The SLURM run of `config` succeeded with the local run's outputs (of the example config,
    which holds `config`), its tiles grouped; returns its
    SLURM jobs."""
    local_dir, expected = local_run
    expected = {name: content for name, content in expected.items() if in_config(Path(name), config)}
    assert rc == 0, f"snakemake on SLURM failed ({rc}):\n{failure_report(out)}"
    got = final_outputs(workdir)
    assert sorted(got) == sorted(expected)
    for name, content in expected.items():
        assert got[name] == content, f"{name} differs from the local run's"

    jobs = slurm_jobs(run_id)
    rules = {job["rule"] for job in jobs}
    assert {"store", "tile", "matrix", "merge"} <= rules, jobs
    assert all(job["state"] == "COMPLETED" for job in jobs), jobs
    tiles = [job for job in jobs if job["rule"] == "tile"]
    assert sorted(job["comment"] for job in tiles) == sorted(expected_tile_groups(local_dir, config)), tiles
    return jobs


def test_example_on_slurm_equals_local_run_and_tiles_get_a_gpu(local_run, slurm_run):
    jobs = check_run(local_run, example_config(BLOCK_SIZE), *slurm_run)
    tiles = [job for job in jobs if job["rule"] == "tile"]
    for job in tiles:
        assert "gpu:1" in job["request"], f"tile job asked SLURM for no GPU: {job}"
        assert "gpu" in job["gres"], f"SLURM gave the tile job no GPU: {job}"
    for job in jobs:
        if job["rule"] != "tile":
            assert not job["request"] and not job["gres"], f"CPU job asked for a GRES: {job}"


def test_cancelled_tile_job_fails_the_run_and_the_rerun_completes(
    cluster, local_run, slurm_run, shipped_profile, cancel_leftovers, tmp_path
):
    """scancel of a running tile job (what a node failure does to it), with retries off.

    Starts from a copy of the finished SLURM run without the tiles of the metric that has the
    most (ccc2's three), so that only those tile jobs, then that metric's matrix and merge, run.
    """
    _, expected = local_run
    done, rc, _, _ = slurm_run
    assert rc == 0, "the SLURM run this test starts from failed (see the test before)"
    cluster("gpu")
    workdir = tmp_path / "work"
    shutil.copytree(done, workdir, symlinks=True)
    pairs = max((workdir / "results").glob("*/*/pairs"), key=lambda d: len(list(d.glob("tile_*.npz"))))
    lost = sorted(pairs.glob("tile_*.npz"))
    assert len(lost) >= 2, f"no metric has several tiles at block_size {BLOCK_SIZE}: {lost}"
    for tile in lost:
        tile.unlink()
    dataset, metric = pairs.parts[-3:-1]
    config = example_config(BLOCK_SIZE, tiles_per_job=1)  # one tile a job: cancel one tile

    log = workdir / "snakemake.out"
    with open(log, "w") as fh:
        proc = start_slurm(workdir, config, shipped_profile, "--retries", "0", log=fh)
    try:
        victim = None  # [SLURM job ID, comment] of the tile job cancelled while running
        tried = set()
        deadline = time.monotonic() + RUN_TIMEOUT
        while victim is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            m = re.search(r"SLURM run ID: (\S+)", log.read_text())
            if not m:
                continue
            if m.group(1) not in cancel_leftovers:
                cancel_leftovers.append(m.group(1))
            running = subprocess.run(
                ["squeue", "-h", "--name", m.group(1), "--states=RUNNING", "-O", "JobID:|,Comment:|"],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout.split()
            tiles = [row.split("|")[:2] for row in running if "|rule_tile" in row and row.split("|")[0] not in tried]
            if not tiles:
                continue
            tried.add(tiles[0][0])
            subprocess.run(["scancel", tiles[0][0]], capture_output=True, timeout=30)
            for _ in range(50):  # it may have finished just before: then take the next one
                state = subprocess.run(
                    ["squeue", "-h", "--states=all", "-j", tiles[0][0], "-o", "%T"],
                    capture_output=True,
                    text=True,
                    timeout=30,
                ).stdout.strip()
                if state not in ("RUNNING", "COMPLETING"):
                    break
                time.sleep(0.1)
            if state == "CANCELLED":
                victim = tiles[0]
        assert victim, f"could not cancel a running tile job:\n{tail(log)}"
        rc = proc.wait(timeout=max(1, deadline - time.monotonic()))
    finally:
        stop(proc)
    out = log.read_text()
    assert rc != 0, f"the run with a cancelled job (SLURM job {victim[0]}) succeeded:\n{out[-4000:]}"
    # a group job (every tile job is one, of tiles_per_job tiles) fails as "Error in group" with its log
    failed = rf"SLURM-job '{victim[0]}' failed.*CANCELLED|Error in group \S+\n\s+log: \S+/{victim[0]}\.log"
    assert re.search(failed, out), out[-4000:]
    run = int(re.search(r"_(\d+)_tile$", victim[1]).group(1))  # tile (i, j) is run j(j+1)/2 + i
    j = max(j for j in range(run + 1) if j * (j + 1) // 2 <= run)
    i = run - j * (j + 1) // 2
    assert not (pairs / f"tile_{i}_{j}.npz").exists(), "the cancelled job's tile was left behind"
    assert len(list(pairs.glob("tile_*.npz"))) == len(lost) - 1, "the other tiles were not computed (keep-going)"

    rc, out, run_id = run_slurm(workdir, config, shipped_profile, cancel_leftovers)
    assert rc == 0, f"the rerun failed ({rc}):\n{failure_report(out)}"
    reran = sorted(job["comment"] for job in slurm_jobs(run_id))
    downstream = ["merge"] + (["matrix"] if f"results/{dataset}/{metric}/matrix.tsv" in expected else [])
    assert reran == sorted([victim[1]] + [f"rule_{rule}_wildcards_{dataset}_{metric}" for rule in downstream]), reran
    got = final_outputs(workdir)
    for name, content in expected.items():
        assert got[name] == content, f"{name} differs from the local run's"


def test_cpu_only_cluster_with_a_minimal_site_profile_asks_for_no_gpu(cluster, local_run, cancel_leftovers, tmp_path):
    """A site profile naming only the executor and the partition, on a cluster without GPUs:
    `backend: auto` tile jobs ask SLURM for none (`tile_gpu: auto` asks sinfo), and every
    resource comes from the workflow profile."""
    cluster("cpu")
    config_home = minimal_site_profile(tmp_path / "config")
    workdir = tmp_path / "work"
    workdir.mkdir()
    # ccc2 alone (its 3 tiles make 2 tile jobs): the example's other datasets and the screen
    # ran on the GPU cluster above, and every run on this 2-CPU test cluster takes minutes
    config = example_config(BLOCK_SIZE)
    config["datasets"] = {"example_vcf": {**config["datasets"]["example_vcf"], "metrics": ["ccc2"]}}
    del config["screens"]
    assert config["backend"] == "auto" and config.get("tile_gpu", "auto") == "auto"
    rc, out, run_id = run_slurm(workdir, config, config_home, cancel_leftovers, "--retries", "0")
    jobs = check_run(local_run, config, workdir, rc, out, run_id)
    for job in jobs:
        assert not job["request"] and not job["gres"], f"a job asked for a GRES on a CPU-only cluster: {job}"
    # the tile jobs' memory comes from profiles/default: 8000 MB a tile, so the job of one tile
    # asks for 8000M and the job of two for twice that (which job SLURM lists first varies)
    memory = []
    for tile_job in (job for job in jobs if job["rule"] == "tile"):
        detail = subprocess.run(
            ["scontrol", "-o", "show", "job", tile_job["id"]], capture_output=True, text=True, timeout=30
        ).stdout
        found = re.search(r"\bMinMemoryNode=(\d+)M\b", detail)
        assert found, detail
        memory.append(int(found.group(1)))
    assert sorted(memory) == [8000, 16000], memory
