"""The end-to-end and GPU benchmarks' --smoke modes, so that neither can rot unnoticed.

bench_gpu.py's tile-job rows once failed for months on a store manifest the pipeline had
outgrown; its smoke mode runs that path (on the numpy backend where there is no GPU).
"""

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
    assert "MISMATCH" not in out


def test_bench_output_smoke(tmp_path):
    out = run_bench("bench_output.py", "--out", str(tmp_path / "out.md"), "--tmp", str(tmp_path)).stdout
    table = (tmp_path / "out.md").read_text()
    for stage in ("read", "pairs", "matrix"):
        assert f"| {stage} |" in table, out
