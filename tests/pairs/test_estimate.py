"""The planning model of `genotile plan`: the workflow's defaults, the stages' split, the
measured runs it must predict (bench/RESULTS.md), and its refusals."""

import doctest
import json
from pathlib import Path

import pytest
import yaml

from genotile.cli import main
from genotile.core import rates
from genotile.core.blocks import auto_block_size, words_per_vector
from genotile.core.metrics import METRICS
from genotile.errors import GenotileError
from genotile.pairs import estimate as estimate_module
from genotile.pairs.estimate import bit_macs_per_pair, estimate, layout_for

REPO = Path(__file__).resolve().parents[2]
KING = METRICS["king"]


def test_docstring_examples():
    result = doctest.testmod(estimate_module)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize(
    ("n", "m", "gpus", "measured_s", "passing"),
    [
        # bench/RESULTS.md "Session 18: the king epilogue" (2026-11-27: one H100 with 16 cores,
        # the slower of two plain runs; 2 x H200 with 32, the median of three after the first)
        # and "Session 19: a million samples x 50,000" (one H100, the slower of two plain runs):
        # the whole `snakemake --cores N` run of king on a .bed of n x m, 300 planted relatives
        (1_000_000, 20_000, 1, 25.80, 300),
        (1_000_000, 50_000, 1, 42.93, 300),
        (1_000_000, 20_000, 2, 18.10, 300),
    ],
)
def test_predicts_the_measured_biobank_runs_within_a_quarter(n, m, gpus, measured_s, passing):
    pairs = n * (n - 1) // 2
    cores = 16 * gpus
    est = estimate(KING, n, m, gpus=gpus, cores=cores, pass_fraction=passing / pairs)
    assert abs(est.seconds / measured_s - 1) < 0.25, (est.seconds, measured_s)
    # the stages, each from its measured rate (core/rates.py)
    # made on the GPU: a start, then the genotypes at the rate
    assert est.store_seconds == pytest.approx(rates.STORE_GPU_START + n * m / rates.STORE_GPU["bed"][cores])
    # the GEMM by the comparison, the epilogue by the pair, shared by the GPUs
    one_gpu = pairs * m / rates.TILES["cupy-b1"]["king"] + pairs / rates.TILE_PAIRS["cupy-b1"]["king"]
    assert est.tile_seconds == pytest.approx(one_gpu / gpus / rates.MULTI_GPU[gpus], rel=1e-3)
    text = passing * (2 * 12 + 12 * len(KING.columns)) / rates.TEXT_BYTES[2]  # pairs.tsv.gz's rows
    assert est.merge_seconds == pytest.approx(rates.MERGE_RUN + rates.MERGE_TILE * est.tiles + text)
    assert est.start_seconds == rates.START  # tiles in the store job: no tile job starts
    assert est.seconds == pytest.approx(est.store_seconds + est.tile_seconds + est.merge_seconds + est.start_seconds)


def test_issue_26_plan_uses_the_workflows_defaults(capsys):
    """`genotile plan --vectors 1000000 --fields 20000 --metric king --gpus 1` predicted 26.7
    minutes with blocks of 4,096 and every pair passing; a run takes about a minute."""
    assert main(["plan", "--vectors", "1000000", "--fields", "20000", "--metric", "king", "--gpus", "1"]) == 0
    out = capsys.readouterr().out
    assert "blocks of 250,000 (auto, for GPU tiles)" in out
    assert "10 tile(s) (I <= J) in the store job" in out
    assert "threshold 0.0442 (the workflow's default): assumed 1e-06 of pairs pass" in out
    assert "store " in out and "+ tiles " in out and "+ merge " in out and "1 GPU(s)" in out
    est = estimate(KING, 1_000_000, 20_000, gpus=1, cores=16)
    assert 20 < est.seconds < 60  # not 26.7 minutes (a run took 26.3 s on an H100, Session 17)
    assert est.tiles == 10 and est.jobs == 0 and est.pairs_passing == pytest.approx(1e-6 * est.pairs)


def test_block_size_auto_is_the_store_jobs():
    for gpus, n in ((1, 1_000_000), (0, 1_000_000), (1, 5_000), (0, 5_000)):
        est = estimate(KING, n, 20_000, gpus=gpus, cores=4)
        words = words_per_vector(KING.encoding, 20_000)
        assert est.block_size == auto_block_size(n, words, ["king"], gpu=gpus > 0, dense=n <= 20_000)
        assert est.block_auto
    assert estimate(KING, 1_000_000, 20_000, block_size=4096, gpus=1).tiles == 245 * 246 // 2


def test_the_store_size_is_what_the_store_job_writes():
    """A .bed's or .pgen's samples are stored as their 2-bit calls (store/bits.py), 16 bytes a 64
    variants; a VCF's and ccc2's (vectors: variants) as planes."""
    for kind in ("bed", "pgen", None):
        assert estimate(KING, 1_000_000, 20_000, gpus=1, input_kind=kind).store_bytes == 1_000_000 * 16 * 313
    vcf = estimate(KING, 1_000, 20_000, gpus=1, input_kind="vcf")
    assert vcf.store_bytes == 1_000 * layout_for(KING, 20_000, True).total_words * 8 > 1_000 * 16 * 313
    ccc2 = estimate(METRICS["ccc2"], 1_000, 500, gpus=1, input_kind="bed")
    assert ccc2.store_bytes == 1_000 * layout_for(METRICS["ccc2"], 500, True).total_words * 8


def test_gpus_share_the_tiles_and_no_gpu_takes_the_cpu_rate():
    one, two = (estimate(KING, 1_000_000, 20_000, gpus=g, cores=16) for g in (1, 2))
    # 10 tiles: 5 full ones' work each, at each GPU's measured share of one GPU's rate
    assert two.tile_seconds == pytest.approx(one.tile_seconds / 2 / rates.MULTI_GPU[2])
    assert two.store_seconds == one.store_seconds
    cpu = estimate(KING, 100_000, 20_000, gpus=0, cores=16)
    assert cpu.backend == "numba" and cpu.jobs == cpu.tiles > 16
    # 8 jobs of 2 cores at once, the tiles spread largest first: at least the even share
    even = cpu.element_comparisons / (rates.TILES["numba"]["king"] * 16)
    assert even <= cpu.tile_seconds < 1.1 * even
    assert cpu.start_seconds == pytest.approx(rates.START + cpu.jobs * rates.JOB_START / 8)
    with pytest.raises(GenotileError, match="runs on a GPU"):
        estimate(KING, 10, 10, gpus=0, backend="cupy-b1")


def test_defaults_follow_the_workflows_config():
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    assert rates.THRESHOLDS == config["thresholds"]
    assert set(rates.PASS_FRACTION) == {m for m, v in rates.THRESHOLDS.items() if v is not None}


def test_thresholds_and_pass_fractions():
    assumed = estimate(KING, 10_000, 1_000, gpus=1)
    assert assumed.threshold == 0.0442 and assumed.threshold_default
    assert assumed.pass_fraction == rates.PASS_FRACTION["king"][0]
    other = estimate(KING, 10_000, 1_000, gpus=1, threshold=0.2)
    assert not other.threshold_default and "not measured at 0.2" in other.pass_fraction_why
    given = estimate(KING, 10_000, 1_000, gpus=1, pass_fraction=0.25)
    assert given.pairs_passing == pytest.approx(0.25 * given.pairs) and given.pass_fraction_why == "given"
    every = estimate(METRICS["ibs"], 30_000, 1_000, gpus=1)  # ibs: null by default
    assert every.threshold is None and every.pass_fraction == 1
    assert "pairs_max is 200,000,000" in every.refused and "would refuse" in every.describe()
    assert estimate(METRICS["ibs"], 30_000, 1_000, gpus=1, pairs_max=10**9).refused == ""


def test_rates_can_be_replaced(tmp_path, capsys):
    snp = METRICS["snp"]  # one term: comparisons at the rate
    base = estimate(snp, 100_000, 20_000, gpus=1)
    doubled = estimate(snp, 100_000, 20_000, gpus=1, rates={"cupy-b1": {"snp": 2 * rates.TILES["cupy-b1"]["snp"]}})
    assert doubled.tile_seconds == pytest.approx(base.tile_seconds / 2)
    # king's two terms (the GEMM, the epilogue by the pair): a rate given is the whole tile's
    one = rates.TILES["cupy-b1"]["king"]
    given = estimate(KING, 100_000, 20_000, gpus=1, rates={"cupy-b1": {"king": one}})
    assert given.pair_rate == 0 and given.tile_seconds < estimate(KING, 100_000, 20_000, gpus=1).tile_seconds
    assert given.tile_seconds == pytest.approx(given.pairs * 20_000 / one)
    path = tmp_path / "rates.json"
    path.write_text(json.dumps({"_source": "mine", "cupy-b1": {"king": 1e15}}))
    argv = ["plan", "--vectors", "100000", "--fields", "20000", "--metric", "king", "--gpus", "1"]
    assert main([*argv, "--rates", str(path)]) == 0
    assert "tiles: 1e+15 comparisons/s" in capsys.readouterr().out
    path.write_text(json.dumps({"cupy-b1": [1, 2]}))
    assert main([*argv, "--rates", str(path)]) == 1
    assert capsys.readouterr().err.startswith("genotile error: rates of cupy-b1: expected")


@pytest.mark.parametrize(
    ("metric", "complete", "products"),
    [
        ("snp", False, 3),  # V.N, N.V, N_B.N_B on biallelic columns
        ("hamming", False, 1),  # row sums + N_B.N_B
        ("ibs", False, 7),
        ("ibs", True, 2),
        ("king", False, 6),
        ("king", True, 3),
        ("ccc2", False, 9),
        ("ccc2", True, 4),
    ],
)
def test_bit_macs_per_pair_count_the_metrics_products(metric, complete, products):
    m = METRICS[metric]
    assert bit_macs_per_pair(m, layout_for(m, 6400, missing=not complete)) == products * 6400


def test_issue_scale_plans_are_submittable(capsys):
    argv = ["plan", "--vectors", "1000000", "--fields", "1000000", "--metric", "king", "--block-size", "16384"]
    assert main([*argv, "--density", "1e-6", "--gpus", "8", "--tiles-per-job", "4"]) == 0
    out = capsys.readouterr().out
    assert "1,953 tile(s)" in out and "489 tile jobs" in out and "memory per tile job" in out
    assert "no matrix.tsv" in out and "8 GPU(s)" in out
    argv = ["plan", "--vectors", "1000000", "--fields", "100000", "--metric", "ccc2", "--block-size", "auto"]
    assert main([*argv, "--pass-fraction", "1e-4", "--gpus", "8", "--cores", "64"]) == 0
    assert "assumed 0.0001 of pairs pass (given)" in capsys.readouterr().out


def test_plan_defaults_are_this_hosts(monkeypatch, capsys):
    import genotile.runtime.gpu_slots as gpu_slots
    import genotile.util.cpus as cpus

    argv = ["plan", "--vectors", "50000", "--fields", "20000", "--metric", "king"]
    monkeypatch.setattr(cpus, "usable_cpus", lambda: 6)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)  # else the GPUs it names
    for found, says in ((0, "time on 6 CPU cores (no GPU), numba"), (3, "time on 3 GPU(s) and 6 CPU cores, cupy-b1")):
        monkeypatch.setattr(gpu_slots, "host_gpu_count", lambda found=found: found)
        assert main(argv) == 0
        assert says in capsys.readouterr().out
    assert main([*argv, "--gpus", "0"]) == 0  # --gpus overrides the host's 3
    assert "(no GPU), numba" in capsys.readouterr().out
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # a job granted one GPU of the three
    assert main(argv) == 0
    assert "time on 1 GPU(s)" in capsys.readouterr().out


def test_ccc3_plan_takes_the_default_threshold(capsys):
    assert main(["plan", "--metric", "ccc3", "--vectors", "20000", "--fields", "2000", "--gpus", "0"]) == 0
    out = capsys.readouterr().out
    assert "blocks of 4,096" in out and "threshold 0.3: assumed 1e-06 of triples pass" in out
    # numba's fused kernel holds three blocks' planes (4,096 rows each, 2,000 samples a row),
    # its output buffers and a sorted run; numpy's 4,096-row masked batches are said apart
    memory = next(line for line in out.splitlines() if "memory per job" in line)
    assert "on the CPU (numba); the numpy backend's masked batches of 4,096 rows add 2.17 GB" in memory, memory


def test_ccc3_plan_on_gpus_as_the_workflow_runs_it(capsys):
    """On GPUs (the workflow's `block_size: auto`): one block of up to 32,768 SNPs, the middle
    block in a stage a GPU, and the time at the fused kernel's measured rate (Session 14: 39.6 s
    whole on one H100, 22.4 s on two H200s)."""
    for gpus, stages, total in (("1", "1 stage(s)", "~40 s"), ("2", "2 stage(s)", "~24 s")):
        assert main(["plan", "--metric", "ccc3", "--vectors", "20000", "--fields", "2000", "--gpus", gpus]) == 0
        out = capsys.readouterr().out
        assert f"blocks of 32,768, {stages}" in out, out
        assert f"time on {gpus} GPU(s): {total}: counting" in out, out


def test_ccc3_plan_counts_the_gpus_the_workflow_counts(capsys, monkeypatch):
    """Without --gpus, the GPUs the workflow's ccc3 stages are cut for (core/blocks.visible_gpu_count:
    CUDA_VISIBLE_DEVICES where set), so that the plan is the run's."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert main(["plan", "--metric", "ccc3", "--vectors", "20000", "--fields", "2000"]) == 0
    out = capsys.readouterr().out
    assert "blocks of 32,768, 2 stage(s)" in out and "time on 2 GPU(s)" in out, out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vectors", "0"], "argument --vectors: expected a whole number >= 2 (a pair needs two vectors): '0'"),
        (["--vectors", "1"], "argument --vectors: expected a whole number >= 2"),
        (["--fields", "0"], "argument --fields: expected a whole number >= 1"),
        (["--block-size", "0"], "argument --block-size: expected a positive integer or auto"),
        (["--pass-fraction", "2"], "argument --pass-fraction/--density: expected a fraction between 0 and 1"),
        (["--threshold", "inf"], "argument --threshold: 'inf': a threshold must be a finite number"),
        (["--gpus", "-1"], "argument --gpus: expected a whole number >= 0"),
    ],
)
def test_bad_plan_arguments_are_one_line(capsys, args, message):
    argv = ["plan", "--vectors", "100", "--fields", "100", "--metric", "king", *args]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    first, hint = capsys.readouterr().err.splitlines()
    assert first == f"genotile error: {message}" or first.startswith(f"genotile error: {message}"), first
    assert hint == "see: genotile plan --help"


def test_bad_estimate_arguments():
    with pytest.raises(GenotileError, match="nothing to compare in 0 vectors"):
        estimate(METRICS["snp"], 0, 10)
    with pytest.raises(GenotileError):
        estimate(METRICS["snp"], 10, 10, block_size=0)
    with pytest.raises(GenotileError, match="pass fraction"):
        estimate(METRICS["snp"], 10, 10, pass_fraction=2)
    with pytest.raises(GenotileError, match="no measured rate"):
        estimate(METRICS["snp"], 10, 10, backend="nope")
    with pytest.raises(GenotileError, match="no measured store rate"):
        estimate(METRICS["snp"], 10, 10, input_kind="csv")
