"""The code stays clean: ruff, snakefmt and Snakemake's own linter."""

import subprocess
import sys

from snakerun import REPO


def run(*cmd):
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)


def test_ruff():
    proc = run(sys.executable, "-m", "ruff", "check", "src", "scripts", "tests", "bench")
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_snakefmt():
    proc = run(sys.executable, "-m", "snakefmt", "--check", ".")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_snakemake_lint():
    proc = run(sys.executable, "-m", "snakemake", "--lint")
    assert proc.returncode == 0 and "Congratulations" in proc.stdout + proc.stderr, proc.stdout[-3000:]
