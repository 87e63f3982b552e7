"""runtime/rule.run_rule ends a Snakemake script job's process once its step has run (`leave`),
skipping the interpreter's teardown, with what an ending interpreter does besides done first."""

import subprocess
import sys
import textwrap
import types

from genotile.runtime.rule import run_rule

JOB = """
import atexit, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from genotile.runtime.rule import run_rule

out = Path(sys.argv[1])


class Job:  # what a `script:` job's preamble unpickles as `snakemake`
    log = [str(out / "rule.log")]
    rule = "demo"


snakemake = Job() if sys.argv[2] == "job" else None
atexit.register(lambda: (out / "atexit").write_text("ran"))


def step(sm):
    def later():
        time.sleep(0.3)
        (out / "thread").write_text("joined")

    threading.Thread(target=later).start()  # not a daemon: joined before the process ends
    pool = ThreadPoolExecutor(1)
    pool.submit(lambda: (time.sleep(0.3), (out / "pool").write_text("done")))
    pool.shutdown(wait=False)
    sys.stdout.write("unflushed")  # a pipe: block-buffered


run_rule(snakemake if snakemake is not None else Job(), step)
(out / "after").write_text("the script went on")
"""


def run_job(tmp_path, kind: str) -> subprocess.CompletedProcess:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(JOB))
    return subprocess.run([sys.executable, str(script), str(tmp_path), kind], capture_output=True, text=True)


def test_a_script_job_ends_after_its_step_with_its_threads_and_exit_functions_done(tmp_path):
    proc = run_job(tmp_path, "job")
    assert proc.returncode == 0 and proc.stdout == "unflushed", proc.stderr
    assert (tmp_path / "thread").read_text() == "joined" and (tmp_path / "pool").read_text() == "done"
    assert (tmp_path / "atexit").read_text() == "ran" and (tmp_path / "rule.log").exists()
    assert not (tmp_path / "after").exists()  # the process ended in run_rule


def test_another_caller_of_run_rule_goes_on(tmp_path):
    """Not the `snakemake` object of `__main__` (a test, a script calling it for another): no early end."""
    proc = run_job(tmp_path, "other")
    assert proc.returncode == 0 and proc.stdout == "unflushed", proc.stderr
    assert (tmp_path / "after").exists() and (tmp_path / "atexit").read_text() == "ran"
    done = []
    run_rule(types.SimpleNamespace(log=[str(tmp_path / "in.log")], rule="demo"), lambda sm: done.append(sm.rule))
    assert done == ["demo"]  # and this test's process is still here


CLI = """
import atexit, sys
from pathlib import Path

from genotile.runtime.rule import exit_without_teardown

out = Path(sys.argv[1])


class Held:  # freed by the interpreter's teardown, which an exit without it skips
    def __del__(self):
        (out / "teardown").write_text("ran")


held = Held()
atexit.register(lambda: (out / "atexit").write_text("ran"))
exit_without_teardown()  # the Snakefile's onsuccess
sys.stdout.write("unflushed")
sys.exit(int(sys.argv[2]))  # Snakemake's main, its run done
"""


def run_cli(tmp_path, name: str, status: int) -> subprocess.CompletedProcess:
    script = tmp_path / name
    script.write_text(textwrap.dedent(CLI))
    return subprocess.run([sys.executable, str(script), str(tmp_path), str(status)], capture_output=True, text=True)


def test_snakemakes_process_exits_without_its_teardown_after_a_run(tmp_path):
    proc = run_cli(tmp_path, "snakemake", 0)
    assert proc.returncode == 0 and proc.stdout == "unflushed", proc.stderr
    assert (tmp_path / "atexit").read_text() == "ran" and not (tmp_path / "teardown").exists()


def test_another_status_or_program_exits_as_usual(tmp_path):
    proc = run_cli(tmp_path, "snakemake", 3)
    assert proc.returncode == 3 and (tmp_path / "teardown").exists() and (tmp_path / "atexit").exists()
    (tmp_path / "teardown").unlink()
    proc = run_cli(tmp_path, "other.py", 0)  # not Snakemake's command line
    assert proc.returncode == 0 and (tmp_path / "teardown").exists()
