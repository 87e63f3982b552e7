"""Helpers for tests that run the Snakemake workflow in a temporary working directory."""

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
ALPHABET = list("ACGTACGTacgtNN--RYKM")


def random_alignment(rng, n, length, p_change=0.15):
    base = rng.choice(list("ACGT"), length)
    seqs = []
    for _ in range(n):
        s = base.copy()
        hit = rng.random(length) < p_change
        s[hit] = rng.choice(ALPHABET, hit.sum())
        seqs.append("".join(s))
    return seqs


def write_fasta(path, seqs, ids=None):
    ids = ids or [f"seq{i}" for i in range(len(seqs))]
    with open(path, "w") as fh:
        for name, s in zip(ids, seqs, strict=True):
            fh.write(f">{name} some description\n")
            for k in range(0, len(s), 60):
                fh.write(s[k : k + 60] + "\n")
    return ids


def same_size_edit(path) -> None:
    """One base of a FASTA file's first sequence changed, its size kept; its mtime moved on by a
    second, for certain (a write within one tick of the clock may keep it)."""
    path = Path(path)
    st = path.stat()
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = ("C" if lines[1][0].upper() == "A" else "A") + lines[1][1:]
    path.write_text("".join(lines))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def snakemake_cmd(workdir, config: dict, *extra) -> list[str]:
    """The command that runs the workflow in `workdir` with `config` (written there as config.yaml)."""
    cfg = Path(workdir) / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    return [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(cfg),
        *extra,
    ]


def snakemake(workdir, config: dict, *extra, check=True):
    config = {"report": False, **config}  # plots only where a test asks for them
    cmd = snakemake_cmd(workdir, config, "--cores", "2", *extra)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


def read_matrix(path):
    lines = Path(path).read_text().splitlines()
    header = lines[0].split("\t")
    assert header[0] == ""
    rows = [line.split("\t") for line in lines[1:]]
    assert [r[0] for r in rows] == header[1:]
    return header[1:], np.array([[int(v) for v in r[1:]] for r in rows])


def read_pairs(path):
    with gzip.open(path, "rt") as fh:
        lines = fh.read().splitlines()
    return lines[0].split("\t"), [tuple(line.split("\t")) for line in lines[1:]]


def job_counts(output: str) -> dict[str, int]:
    """Snakemake's 'Job stats' table as {rule: count} (dry runs and real runs)."""
    counts = {}
    if "Job stats:" not in output:
        return counts
    for line in output[output.index("Job stats:") :].splitlines()[3:]:
        m = re.fullmatch(r"\s*(\w+)\s+(\d+)\s*", line)
        if not m or m.group(1) == "total":
            break
        counts[m.group(1)] = int(m.group(2))
    return counts


def jobs_run(output: str) -> dict[str, int]:
    """How many jobs of each rule a real run started, from their 'rule X:' headers."""
    counts: dict[str, int] = {}
    for m in re.finditer(r"^(?:local)?(?:rule|checkpoint) (\w+):$", output, flags=re.MULTILINE):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts
