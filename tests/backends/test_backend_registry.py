"""One answer to "which backend, and does it use a GPU" (backends/registry.py) for tiles, triples,
screening, GPU slots and the rules; the config schema's backend enum is the registry's."""

import contextlib
from pathlib import Path

import pytest
import yaml

from genotile import backends
from genotile.backends import registry
from genotile.errors import GenotileError
from genotile.runtime import gpu_slots
from genotile.screen import backend as screen_backend

SCHEMA = Path(__file__).resolve().parents[2] / "config" / "schema" / "config.schema.yaml"


def test_schema_backend_enum_is_the_registry():
    schema = yaml.safe_load(SCHEMA.read_text())
    assert sorted(schema["properties"]["backend"]["enum"]) == sorted(registry.NAMES)
    assert schema["properties"]["backend"]["default"] == registry.AUTO


def test_registry_modules_are_the_tile_backends():
    assert list(backends.BACKENDS) == list(registry.BACKENDS)
    for name, info in registry.BACKENDS.items():
        module = backends.BACKENDS[name]
        assert module.__name__ == info.module
        # a GPU backend lives under backends/cuda, a CPU one under backends/cpu
        assert module.__name__.startswith("genotile.backends.cuda." if info.gpu else "genotile.backends.cpu.")
        assert callable(module.count_matrices) and callable(module.is_available)


def test_uses_gpu_answers_for_every_name_and_refuses_others():
    assert registry.uses_gpu("auto") is None
    assert [n for n in registry.BACKENDS if registry.uses_gpu(n)] == ["cupy-b1", "cupy-int8"]
    assert [n for n in registry.BACKENDS if registry.is_cpu(n)] == ["numba", "numpy", "numpy-popcount"]
    for call in (
        registry.uses_gpu,
        registry.is_cpu,
        backends.resolve,
        screen_backend.resolve,
        gpu_slots.slot_for_backend,
    ):
        with pytest.raises(GenotileError, match=r"unknown backend 'cupy'; known: auto, cupy-b1"):
            call("cupy")


def test_gpu_slot_only_for_a_backend_that_may_use_a_gpu(monkeypatch):
    monkeypatch.setenv(gpu_slots.ENV, "3")  # a GPU chosen for the job (SLURM): the slot yields it
    for name in registry.BACKENDS:
        slot = gpu_slots.slot_for_backend(name)
        if registry.is_cpu(name):
            assert isinstance(slot, contextlib.nullcontext), name
        else:
            with slot as device:
                assert device == "3", name
    monkeypatch.delenv(gpu_slots.ENV)
    monkeypatch.setattr(gpu_slots, "host_gpu_count", lambda: 0)
    assert isinstance(gpu_slots.slot_for_backend("auto"), contextlib.nullcontext)  # auto, no GPU here
