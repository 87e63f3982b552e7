"""The code stays clean: ruff, ruff format, snakefmt, Snakemake's own linter, and the pre-commit
hooks that run the same checks before a commit."""

import subprocess
import sys

import pytest
import yaml
from snakerun import REPO

LINTED = ("src", "scripts", "tests", "bench", "dev")


def run(*cmd):
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)


def test_ruff():
    proc = run(sys.executable, "-m", "ruff", "check", *LINTED)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_ruff_format():
    proc = run(sys.executable, "-m", "ruff", "format", "--check", *LINTED)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_snakefmt():
    proc = run(sys.executable, "-m", "snakefmt", "--check", ".")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_snakemake_lint():
    proc = run(sys.executable, "-m", "snakemake", "--lint")
    assert proc.returncode == 0 and "Congratulations" in proc.stdout + proc.stderr, proc.stdout[-3000:]


def test_mypy():
    """Type checks of src/genotile ([tool.mypy] in pyproject.toml names what `mypy` checks)."""
    proc = run(sys.executable, "-m", "mypy")
    assert proc.returncode == 0 and "Success" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_pre_commit_hooks_run_these_checks():
    """.pre-commit-config.yaml is valid and runs ruff, ruff format and snakefmt on what they lint here."""
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    assert {"ruff", "ruff-format", "snakefmt"} <= set(hooks), sorted(hooks)
    assert hooks["ruff"]["entry"].startswith("ruff check")
    assert hooks["ruff-format"]["entry"].startswith("ruff format")
    assert hooks["snakefmt"]["entry"] == "snakefmt" and "smk" in hooks["snakefmt"]["files"]
    pytest.importorskip("pre_commit", reason="pre-commit is not installed (the test extra has it)")
    proc = run(sys.executable, "-m", "pre_commit", "validate-config", ".pre-commit-config.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
