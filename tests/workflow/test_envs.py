"""Every rule names a conda env, and the envs and the container definition match pyproject.toml
(what `--sdm conda` and `--sdm apptainer` install; no conda channel or registry is reachable
from the test machines, so they are checked here rather than built)."""

import re

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version
from snakerun import REPO

from genotile import __version__, backends
from genotile.backends import registry

tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")

ENVS = ("cpu.yaml", "gpu.yaml", "report.yaml")


def _names(requirements) -> set[str]:
    """Package names of pip/conda requirement strings ("numpy>=2.0" -> "numpy")."""
    return {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in requirements}


def _conda_deps(name) -> list[str]:
    env = yaml.safe_load((REPO / "envs" / name).read_text())
    return [d for d in env["dependencies"] if isinstance(d, str)]


def _env(name) -> set[str]:
    return {d for d in _names(_conda_deps(name)) if d not in ("python", "pip")}


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _pins(name) -> dict[str, str]:
    """{package: minor version} of an env's `name=X.Y` conda pins."""
    pins = {}
    for dep in _conda_deps(name):
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)=(\d+\.\d+)", dep)
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


def test_every_rule_names_a_conda_env():
    for smk in sorted((REPO / "rules").glob("*.smk")):
        text = smk.read_text()
        rules = re.split(r"^(?:checkpoint|rule) (\w+):\n", text, flags=re.M)[1:]
        for name, body in zip(rules[::2], rules[1::2], strict=True):
            if "conda:" not in body:
                assert "localrule: True" in body or name == "all", f"{smk.name}: rule {name} has no conda env"


def test_cpu_env_is_the_package_dependencies_and_gpu_env_adds_cupy():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert _env("cpu.yaml") == _names(pyproject["dependencies"])
    gpu_extra = _names(pyproject["optional-dependencies"]["gpu"])  # cupy-cuda12x: the pip wheel of cupy
    assert {re.sub(r"-cuda\d+x$", "", name) for name in gpu_extra} == {"cupy"}
    assert _env("gpu.yaml") - _env("cpu.yaml") == {"cupy", "cuda-version"}


def test_rules_that_run_a_backend_take_the_gpu_env_unless_a_cpu_backend_is_pinned():
    for smk, rule in (("tiles.smk", "tile"), ("triples.smk", "triples"), ("screen.smk", "screen_tile")):
        body = (REPO / "rules" / smk).read_text().split(f"rule {rule}:\n", 1)[1].split("\nrule ", 1)[0]
        assert re.search(r"conda:\n\s+tile_env\(\)", body), f"rule {rule} does not choose its env by backend"
    common = (REPO / "rules" / "common.smk").read_text()
    tile_env = re.search(r"def tile_env\(\).*?\n\n\n", common, re.S).group(0)
    choice = r'"\.\./envs/cpu\.yaml"\s+if _backend_registry\.is_cpu\(config\["backend"\]\)\s+else "\.\./envs/gpu\.yaml"'
    assert re.search(choice, tile_env), tile_env
    # the registry's CPU backends are exactly the package's backends that are not CuPy's
    cpu = {name for name in registry.BACKENDS if registry.is_cpu(name)}
    cuda = "genotile.backends.cuda."
    assert cpu == {name for name, mod in backends.BACKENDS.items() if not mod.__name__.startswith(cuda)}
    assert not registry.is_cpu("auto") and "CPU_BACKENDS" not in common
    # and the same choice gives those rules their `gpu` resource
    for smk in ("tiles.smk", "triples.smk", "screen.smk"):
        assert "gpu=tile_gpus," in (REPO / "rules" / smk).read_text(), smk


def test_report_env_is_the_package_and_the_pipeline_extra_but_snakemake():
    pyproject = _pyproject()
    pipeline = _names(pyproject["optional-dependencies"]["pipeline"]) - {"snakemake"}
    assert _env("report.yaml") == _names(pyproject["dependencies"]) | pipeline


def test_envs_pin_minor_versions_within_pyproject_bounds():
    pyproject = _pyproject()
    bounds = {Requirement(r).name.lower(): Requirement(r).specifier for r in pyproject["dependencies"]}
    for extra in ("pipeline", "gpu"):
        for r in pyproject["optional-dependencies"][extra]:
            req = Requirement(r)
            bounds[re.sub(r"-cuda\d+x$", "", req.name.lower())] = req.specifier
    bounds["python"] = Requirement(f"python{pyproject['requires-python']}").specifier
    seen = {}
    for name in ENVS:
        pins = _pins(name)
        # every package but pip and the CUDA bound is pinned to a minor version (conda's `=X.Y`:
        # any X.Y.*, so bug-fix releases still come in)
        unpinned = {d for d in _names(_conda_deps(name)) if d not in pins} - {"pip", "cuda-version"}
        assert not unpinned, f"envs/{name}: {unpinned} not pinned as name=X.Y"
        for package, version in pins.items():
            assert package in bounds, f"envs/{name}: {package} is in no pyproject.toml requirement"
            assert bounds[package].contains(Version(version)), f"envs/{name}: {package}={version} vs {bounds[package]}"
            # the envs agree with each other, so that one package is one version throughout
            assert seen.setdefault(package, version) == version, f"envs/{name}: {package}={version} vs {seen[package]}"


def test_envs_install_genotile_from_the_workflow_source():
    """pip installs genotile from ${GENOTILE_SOURCE} (set by the Snakefile, runtime/deploy.py), and
    each env names the package's version, so that a new version changes the env's content and
    Snakemake builds the env again (it keys envs by their file's content)."""
    snakefile = (REPO / "Snakefile").read_text()
    assert "export_package_source(workflow.current_basedir)" in snakefile
    for name in ENVS:
        text = (REPO / "envs" / name).read_text()
        env = yaml.safe_load(text)
        pip = [d for d in env["dependencies"] if isinstance(d, dict)]
        assert pip == [{"pip": ["${GENOTILE_SOURCE}"]}], f"envs/{name}: {pip}"
        assert "pip" in env["dependencies"], f"envs/{name}: no pip to install genotile with"
        assert f"genotile {__version__} " in text, f"envs/{name} does not name genotile {__version__}"


def test_container_definition_installs_the_package_from_pyproject():
    """Apptainer.def builds the image of `--sdm apptainer` from this repository's pyproject.toml."""
    pyproject = _pyproject()
    text = (REPO / "Apptainer.def").read_text()
    header = dict(re.findall(r"^(Bootstrap|From):\s*(\S+)\s*$", text, re.M))
    assert header["Bootstrap"] == "docker", header
    m = re.fullmatch(r"python:(\d+\.\d+)-slim(?:-\w+)?", header["From"])
    assert m, header["From"]
    assert Requirement(f"python{pyproject['requires-python']}").specifier.contains(Version(m.group(1)))
    assert m.group(1) == next(d for d in _conda_deps("cpu.yaml") if d.startswith("python=")).split("=")[1]
    sections = dict(re.findall(r"^%(\w+)\n(.*?)(?=^%|\Z)", text, re.M | re.S))
    copied = {line.split()[0] for line in sections["files"].splitlines() if line.strip()}
    # what a build of the package reads: pyproject, its readme, the sources (package data included)
    assert {"pyproject.toml", "README.md", "src"} <= copied, copied
    installs = re.findall(r"pip install [^\n]*?\"?/opt/genotile\[([a-z,]+)\]\"?", sections["post"])
    assert installs, sections["post"]
    extras = set(installs[0].split(","))
    # Snakemake itself runs inside the image (the rules' scripts unpickle its job object)
    assert "pipeline" in extras and extras <= set(pyproject["optional-dependencies"]), extras
    assert re.search(r"^\s*python -c .*import genotile", sections["test"], re.M), sections["test"]
