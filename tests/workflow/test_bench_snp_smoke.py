"""bench/bench_snp.py --smoke: every phase on a small alignment, so that the bench cannot rot; its
issue-16 stage rows (ingest, pack, matrix.tsv before / after) must report byte-identical outputs,
and hammingdist (where installed) the same distances on upper-case ACGT."""

import subprocess
import sys

from snakerun import REPO


def test_bench_snp_smoke(tmp_path):
    out = tmp_path / "table.md"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench_snp.py"), "--smoke", "--acgt", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    table = out.read_text()
    assert "outputs byte-identical: True" in table, table
    for row in ("| ingest (streaming", "| pack (bincount", "| matrix.tsv (60 x 60", "| `genotile run`"):
        assert row in table, table
    try:
        import hammingdist  # noqa: F401
    except ImportError:
        assert "hammingdist CPU: not run" in table
    else:
        assert "equal genotile's on 2,000 of 2,000 sampled pairs" in table, table
