"""genotile deployed the way the Snakemake workflow catalog's workflows are: as a `module` of
another workflow (what `snakedeploy deploy-workflow` writes), from a path and from a git
repository, run on the catalog test config (.test/config/config.yaml); the outputs are those of
a direct run of the Snakefile. The rules' scripts import the installed package (no sys.path to
the checkout), and the Snakefile points the conda envs at the module's own source."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakerun import REPO

TEST_CONFIG = REPO / ".test" / "config" / "config.yaml"
DATA_FILES = ("matrix.tsv", "pairs.tsv.gz", "histogram.tsv", "matches.tsv.gz")

OUTER_SNAKEFILE = """\
import os
import sys


configfile: "config/config.yaml"


module genotile:
    snakefile:
        {snakefile}
    config:
        config


use rule * from genotile


print("GENOTILE_SOURCE=" + os.environ["GENOTILE_SOURCE"], file=sys.stderr)
"""


def write_config(workdir: Path) -> dict:
    """The .test config with its inputs (relative to .test/) made absolute, as config/config.yaml."""
    config = yaml.safe_load(TEST_CONFIG.read_text())
    base = TEST_CONFIG.parent.parent
    for spec in config.get("datasets", {}).values():
        spec["input"] = str((base / spec["input"]).resolve())
    for spec in config.get("screens", {}).values():
        for key in ("samples", "signatures"):
            spec[key] = str((base / spec[key]).resolve())
    (workdir / "config").mkdir(parents=True)
    (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    return config


def run(workdir: Path, *args) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("GENOTILE_SOURCE", "SNAKEMAKE_PROFILE")}
    cmd = [sys.executable, "-m", "snakemake", "--directory", str(workdir), "--cores", "2", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=workdir)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc.stderr


def outputs(workdir: Path) -> dict[str, bytes]:
    files = [p for name in DATA_FILES for p in (workdir / "results").glob(f"*/*/{name}")]
    return {str(p.relative_to(workdir)): p.read_bytes() for p in sorted(files)}


@pytest.fixture(scope="module")
def direct_run(tmp_path_factory) -> dict[str, bytes]:
    workdir = tmp_path_factory.mktemp("direct")
    config = write_config(workdir)
    run(workdir, "-s", str(REPO / "Snakefile"))
    got = outputs(workdir)
    metrics = sum(len(spec["metrics"]) for spec in config["datasets"].values())
    assert sum(name.endswith("pairs.tsv.gz") for name in got) == metrics, sorted(got)
    assert sum(name.endswith("matches.tsv.gz") for name in got) == len(config["screens"]), sorted(got)
    # the .test config makes several tiles of every metric and screen (tile groups on a cluster)
    assert all(len(list(d.glob("tile_*.npz"))) > 1 for d in (workdir / "results").glob("*/*/pairs")), workdir
    return got


def module_run(workdir: Path, snakefile: str, *args) -> str:
    """Runs a workflow that uses genotile as a module; returns the GENOTILE_SOURCE it set."""
    write_config(workdir)
    (workdir / "Snakefile").write_text(OUTER_SNAKEFILE.format(snakefile=snakefile))
    log = run(workdir, *args)
    return log.split("GENOTILE_SOURCE=", 1)[1].split("\n", 1)[0]


def test_module_from_a_path_gives_the_direct_run_outputs(direct_run, tmp_path):
    workdir = tmp_path / "work"
    source = module_run(workdir, repr(str(REPO / "Snakefile")))
    assert outputs(workdir) == direct_run
    # the conda envs would install the module's own checkout, editable
    assert source == f"-e {REPO.resolve()}"


def git_repository(tmp_path: Path) -> Path:
    """A clone of a repository holding this working tree's files (tracked, and new ones not
    ignored) in its folder `genotile/`, so that what is tested is the code here, committed or
    not, as far as git carries it (a file left out of the repository is missing in the clone)."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    work = tmp_path / "repo"
    for name in filter(None, files):
        source = REPO / os.fsdecode(name)
        if source.is_file():
            (work / "genotile" / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, work / "genotile" / os.fsdecode(name))
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "genotile"]):
        subprocess.run([*git, *args], cwd=work, check=True, capture_output=True)
    clone = tmp_path / "clone"  # by a file:// URL, as from a server
    subprocess.run(["git", "clone", "-q", f"file://{work}", str(clone)], check=True, capture_output=True)
    shutil.rmtree(work)  # only what was committed is left, in the clone
    return clone


def test_module_from_a_git_clone_gives_the_direct_run_outputs(direct_run, tmp_path):
    """From a `git clone` of the repository, as a path.

    Not through `gitfile()` (the module read from a local repository at a tag): Snakemake (9.27)
    fails there, dry runs included, in comparing a script's age with its outputs
    (LocalGitFile.join is handed a LocalSourceFile), and joins the includes of a Snakefile at the
    repository root into absolute paths. `github()` and `gitlab()` modules go through neither; the
    source they give the conda envs is checked in tests/runtime/test_deploy.py.
    """
    clone = git_repository(tmp_path)
    workdir = tmp_path / "work"
    source = module_run(workdir, repr(str(clone / "genotile" / "Snakefile")))
    assert outputs(workdir) == direct_run
    assert source == f"-e {(clone / 'genotile').resolve()}"


def test_rules_and_scripts_import_the_installed_package():
    """No rule file or script reaches the package through sys.path (a module deployed from git
    has no src/ beside its scripts): genotile is installed, in the envs and for Snakemake."""
    for path in [REPO / "Snakefile", *(REPO / "rules").glob("*.smk"), *(REPO / "scripts").glob("*.py")]:
        assert "sys.path" not in path.read_text(), path
