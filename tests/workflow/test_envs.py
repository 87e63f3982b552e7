"""Every rule names a conda env, and the envs match pyproject.toml (what `--sdm conda` installs)."""

import re

import pytest
import yaml
from snakerun import REPO

from genotile import backends
from genotile.backends import registry

tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")


def _names(requirements) -> set[str]:
    """Package names of pip/conda requirement strings ("numpy>=2.0" -> "numpy")."""
    return {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in requirements}


def _env(name) -> set[str]:
    env = yaml.safe_load((REPO / "envs" / name).read_text())
    return {d for d in _names(env["dependencies"]) if d != "python"}


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
