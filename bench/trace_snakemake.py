"""Where a whole `snakemake` run's wall time goes (issues 26, 27): Snakemake's start, genotile's
rules, the DAG, each job's start, imports, work and end, the gaps between jobs, Snakemake's end.

    python3 bench/trace_snakemake.py [--out FILE] -- --cores 16 [any snakemake argument ...]

Runs `python -m snakemake ARGS` in this directory (Snakemake's own defaults: the Snakefile here,
or `-s`, `--directory`) with a `sitecustomize` module put first on PYTHONPATH, in Snakemake's
process and, through the environment, in every job's, that appends timestamped marks to a file:
each process's start, its interpreter ready, the last of its atexit functions; in Snakemake's,
its modules imported, the Snakefile parsed (`Workflow.include`), the DAG (`Workflow.execute` to
`JobScheduler.schedule`), each job's `script()` call and return; in a job's, `run_rule`'s entry
and exit (runtime/rule.py). Prints the split as a table (seconds from the command's start; a
job's row: start, imports and Snakemake's preamble, work, end; processes a job starts, such as a
device pool's workers, are part of its job, not rows of their own). The marks cost a file append
each; a site `sitecustomize` is shadowed for the run. See bench/RESULTS.md, "Session 14: the
time around the jobs".
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SITECUSTOMIZE = r"""
import atexit, importlib.abc, importlib.util, os, sys, time

_FILE = os.environ["GENOTILE_TRACE"]


def mark(what):
    with open(_FILE, "a") as fh:
        fh.write(f"{time.time():.4f}\t{os.getpid()}\t{what}\n")


_cmd = open("/proc/self/cmdline").read().split("\0") if os.path.exists("/proc/self/cmdline") else sys.argv
_MAIN = "snakemake" in _cmd and "-m" in _cmd
# a job: Snakemake's copy of a rule's script (.snakemake/scripts/tmpXXXX.store.py) run by path;
# anything else a job starts (multiprocessing's and a device pool's workers: `python -B -c ...`,
# `python -m ...`) is its child, not a job of its own
_SCRIPT = _cmd[1] if len(_cmd) > 1 and _cmd[1].endswith(".py") and not _cmd[1].startswith("-") else None
_KIND = "snakemake" if _MAIN else "child" if _SCRIPT is None else "job " + os.path.basename(_SCRIPT).split(".", 1)[-1]
mark(f"{_KIND}\tready")
atexit.register(lambda: mark(f"{_KIND}\tatexit"))


def _wrap(owner, name, label):
    original = getattr(owner, name)

    def wrapped(*args, **kwargs):
        mark(f"{_KIND}\t{label} >")
        try:
            return original(*args, **kwargs)
        finally:
            mark(f"{_KIND}\t{label} <")

    setattr(owner, name, wrapped)


_PATCH = {
    "snakemake.workflow": lambda m: (_wrap(m.Workflow, "include", "include"), _wrap(m.Workflow, "execute", "execute")),
    "snakemake.scheduling.job_scheduler": lambda m: _wrap(m.JobScheduler, "schedule", "schedule"),
    "snakemake.script": lambda m: _wrap(m, "script", "job"),
    "genotile.runtime.rule": lambda m: _wrap(m, "run_rule", "run_rule"),
}


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in _PATCH:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            if name == "snakemake.workflow":
                mark(f"{_KIND}\timported")
            _PATCH[name](module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Finder())
"""


def read_marks(path: Path) -> list[tuple[float, int, str, str]]:
    rows = []
    for line in path.read_text().splitlines():
        t, pid, kind, what = line.split("\t")
        rows.append((float(t), int(pid), kind, what))
    return sorted(rows)


def split(marks: list[tuple[float, int, str, str]], start: float, end: float) -> list[tuple[str, str]]:
    """(phase, seconds) rows: Snakemake's phases, then a row a job in the order they started."""
    main = [(t - start, what) for t, _, kind, what in marks if kind == "snakemake"]

    def first(what: str) -> float:
        return next(t for t, w in main if w == what)

    def last(what: str) -> float:
        return [t for t, w in main if w == what][-1]

    rows = [
        ("interpreter start", f"{first('ready'):.3f}"),
        ("Snakemake's imports", f"{first('imported') - first('ready'):.3f}"),
        ("Snakemake's command line, settings, workflow object", f"{first('include >') - first('imported'):.3f}"),
        ("the Snakefile parsed (genotile's rules)", f"{last('include <') - first('include >'):.3f}"),
        ("the DAG", f"{first('schedule >') - first('execute >'):.3f}"),
    ]
    calls, returns = [t for t, w in main if w == "job >"], [t for t, w in main if w == "job <"]
    jobs: dict[int, dict] = {}
    for t, pid, kind, what in marks:
        if kind.startswith("job "):
            jobs.setdefault(pid, {"name": kind[4:]})[what] = t - start
    ordered = sorted(jobs.values(), key=lambda j: j["ready"])
    busy = []
    for job, called in zip(ordered, sorted(calls), strict=False):  # a job's call, in order
        ended = job.get("run_rule <", job.get("atexit", job["ready"]))
        returned = min((t for t in returns if t >= ended), default=ended)
        began = job.get("run_rule >", job["ready"])
        busy.append((called, returned))
        parts = (job["ready"] - called, began - job["ready"], ended - began, returned - ended)
        rows.append(
            (f"job {job['name']} (start / imports and preamble / work / end)", " / ".join(f"{p:.3f}" for p in parts))
        )
    if not busy:  # a dry run, or nothing to do: no job, no scheduling
        rows.append(("whole run (no job ran)", f"{end - start:.3f}"))
        return rows
    idle, running, since = 0.0, 0, first("schedule >")
    for t, step in sorted([(a, 1) for a, _ in busy] + [(b, -1) for _, b in busy]):
        idle += t - since if running == 0 else 0.0
        running, since = running + step, t
    rows += [
        ("Snakemake with no job running (from the DAG to its last job)", f"{idle:.3f}"),
        ("Snakemake's end (last job to its last atexit function)", f"{last('atexit') - max(b for _, b in busy):.3f}"),
        ("Snakemake's process end (from its last atexit function)", f"{end - start - last('atexit'):.3f}"),
        ("whole run", f"{end - start:.3f}"),
    ]
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="also write the table here")
    ap.add_argument("snakemake", nargs=argparse.REMAINDER, help="snakemake's arguments, after --")
    args = ap.parse_args()
    given = args.snakemake[1:] if args.snakemake[:1] == ["--"] else args.snakemake
    with tempfile.TemporaryDirectory(prefix="trace_snakemake.") as tmp:
        (Path(tmp) / "sitecustomize.py").write_text(SITECUSTOMIZE)
        marks = Path(tmp) / "marks.tsv"
        env = {**os.environ, "GENOTILE_TRACE": str(marks)}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (tmp, os.environ.get("PYTHONPATH")) if p)
        start = time.time()
        status = subprocess.run([sys.executable, "-m", "snakemake", *given], env=env).returncode
        end = time.time()
        rows = split(read_marks(marks), start, end)
    table = "\n".join(["| phase | s |", "|---|---:|", *(f"| {a} | {b} |" for a, b in rows)])
    print(table)
    if args.out:
        args.out.write_text(table + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
