"""Every benchmark's --smoke mode, so that none can rot unnoticed (tiny sizes, seconds; the GPU
ones run their CPU path where there is no GPU, and a peer not installed is skipped, said so).

bench_gpu.py's tile-job rows once failed for months on a store manifest the pipeline had
outgrown; its smoke mode runs that path (on the numpy backend where there is no GPU).
"""

import importlib.util
import json
import re
import shutil
import subprocess
import sys

from snakerun import REPO


def run_bench(name: str, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / name), "--smoke", *args], capture_output=True, text=True, timeout=900
    )
    tail = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"{name} --smoke failed ({proc.returncode}):\n{tail}"
    return proc


def test_bench_e2e_smoke(tmp_path):
    out = run_bench("bench_e2e.py", "--out", str(tmp_path)).stdout
    table = (tmp_path / "bench_e2e.md").read_text()
    assert "| tiny | 2 x 4" in table
    assert "| snp_smoke |" in table, out
    try:
        import hammingdist  # noqa: F401

        # genotile's pairs equal hammingdist's, with and without its duplicate removal
        assert table.count("| snp_smoke |") == 2 and table.count("| yes (") >= 2, table
    except ImportError:
        assert "hammingdist not installed" in out
    if shutil.which("plink2"):
        king = [line for line in table.splitlines() if line.startswith("| king_smoke")]
        assert king and "| yes (" in king[0], table


def test_bench_gpu_smoke(tmp_path):
    out = run_bench("bench_gpu.py", "--out", str(tmp_path), "--tmp", str(tmp_path)).stdout
    # the whole tile job (store memmap -> tile file) ran for a nucleotide and a genotype metric
    assert "snp" in out and "king" in out and ("tile job (0, 1)" in out or "tile job memmap->tile file" in out), out
    # --big-tile's vectors (shuffled copies) checked without a GPU, or its rows run with one
    assert "big tile" in out or "GPU" in out.splitlines()[0], out
    assert "MISMATCH" not in out


def test_bench_output_smoke(tmp_path):
    out = run_bench("bench_output.py", "--out", str(tmp_path / "out.md"), "--tmp", str(tmp_path)).stdout
    table = (tmp_path / "out.md").read_text()
    for stage in ("read", "pairs", "matrix"):
        assert f"| {stage} |" in table, out


def test_bench_ccc3_smoke(tmp_path):
    out = run_bench("bench_ccc3.py", "--out", str(tmp_path), "--workdir", str(tmp_path / "work")).stdout
    table = (tmp_path / "bench_ccc3.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ") and "| backend |" not in line]
    # the block triple and the whole run (store, jobs, merge), each the numpy path's bytes
    assert any("| block triple 48x48x48" in r for r in rows) and any("| end to end 60 SNPs" in r for r in rows), out
    assert rows and all(r.endswith("| yes |") for r in rows), table
    assert "GPU rows skipped" in out or "cupy-b1" in table


def test_bench_genotype_smoke(tmp_path):
    out = run_bench("bench_genotype.py", "--out", str(tmp_path / "genotype.md")).stdout
    table = (tmp_path / "genotype.md").read_text()
    first = "numba" if importlib.util.find_spec("numba") else "numpy"  # the backends here, numba first
    for metric in ("ibs", "king"):
        assert f"| {metric}: compute_tile, all tiles (40 x 600), `{first}` backend |" in table, out
        assert f"{metric}: the backends' tiles agree: yes" in out
    assert "| ingest + plan + pack, VCF -> planes (30 x 500) |" in table
    for tool in ("plink1.9", "plink2"):
        if shutil.which(tool):  # the peer ran: a time, not NaN
            assert f"{tool} is not installed" not in out and f"`{tool} --" in table
        else:
            assert f"{tool} is not installed: its peer rows skipped" in out


def test_bench_screen_smoke(tmp_path):
    out = run_bench("bench_screen.py", "--out", str(tmp_path)).stdout
    rows = json.loads((tmp_path / "bench_screen.json").read_text())["rows"]
    numpy_rows = {r["case"]: r for r in rows if r["backend"] == "numpy"}
    # every backend's positions and quality sums are the brute force's; the known answers
    assert all(r["equal"] for r in rows) and len(numpy_rows) == 4, out
    assert numpy_rows["published"]["matches"] >= 4  # the 4 carriers at least
    assert numpy_rows["all-N samples x published signatures"]["matches"] == 16 * 8
    assert numpy_rows["poly-A samples x poly-A signatures ending in C"]["matches"] == 0


def test_ceilings_smoke():
    out = run_bench("ceilings.py").stdout
    assert re.search(r"numba AND \+ popcount ceiling: \S+ word pairs/s on \d+ threads", out), out
    assert "the micro tile's counts equal numpy's popcounts: yes" in out


def test_bench_append_smoke(tmp_path):
    out = run_bench("bench_append.py", "--tmp", str(tmp_path), "--out", str(tmp_path / "append.md")).stdout
    table = (tmp_path / "append.md").read_text()
    # the rerun appended (its store said so) and its outputs are a fresh run's
    assert "8 vectors appended to 60" in table and "outputs identical: yes" in table, out
    assert "| append 8 |" in table and "| fresh 68 |" in table


def test_bench_append_smoke_as_genotile_run(tmp_path):
    """--cli: the same runs as `genotile run` (one process), its stages from its own log."""
    args = ("--cli", "--tmp", str(tmp_path), "--out", str(tmp_path / "c.md"))
    out = run_bench("bench_append.py", *args).stdout
    table = (tmp_path / "c.md").read_text()
    assert "`genotile run`" in table and "8 vectors appended to 60" in table and "outputs identical: yes" in table, out
    assert re.search(r"\| append 8 \| [\d.]+ \| merge [\d.]+ store [\d.]+ tiles [\d.]+ \|", table), table


def test_bench_append_smoke_repeated(tmp_path):
    """--repeat: each append from the first run's folder (so each one appends: its store says so),
    in turn with fresh runs; the ratio pair by pair and its median."""
    out = run_bench("bench_append.py", "--repeat", "2", "--tmp", str(tmp_path), "--out", str(tmp_path / "a.md")).stdout
    table = (tmp_path / "a.md").read_text()
    assert "| append 8 (2) |" in table and "| fresh 68 (2) |" in table and "outputs identical: yes" in table, out
    assert table.count("8 vectors appended to 60") == 2, table
    assert re.search(r"append / fresh, pair by pair: [\d.]+, [\d.]+; median [\d.]+", table), table


def test_bench_query_smoke(tmp_path):
    out = run_bench("bench_query.py", "--tmp", str(tmp_path), "--out", str(tmp_path / "query.md")).stdout
    table = (tmp_path / "query.md").read_text()
    # the query beside FILE's dataset took FILE's store, and its outputs are those of both files read
    assert "store job said: FILE's 300 vectors from its all-pairs store in" in table, out
    assert "outputs identical: yes" in table and "| query, both files read |" in table
