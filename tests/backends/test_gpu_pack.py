"""GPU packing (backends/cuda/cupy_pack.py) equals numpy packing bit for bit.

Skipped where there is no CUDA GPU / CuPy. On a GPU machine: genotype planes (both stores,
with and without missing calls) and categorical planes (nucleotide and categorical alphabets,
2-5 symbols a column, missing entries) at field counts around word boundaries, output buffers
poisoned; and the pack stage's planes.npy and manifest with GPU packing equal the CPU ones.
"""

import json

import numpy as np
import pytest

from genotile.backends.cuda import cupy_common
from genotile.core.encode import (
    CATEGORICAL,
    MISSING,
    NUCLEOTIDE,
    categorical_encoding,
    categorical_planes,
    symbol_counts,
)
from genotile.core.genotype import genotype_layout, genotype_planes
from genotile.core.plan import Plan
from genotile.store.pack import pack, use_gpu_packing

HAS_GPU = cupy_common.has_gpu()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU / CuPy: GPU packing is not testable here")

SHAPES = [(1, 1), (3, 63), (33, 64), (65, 65), (130, 1000), (7, 70_001)]


@pytest.fixture(autouse=True)
def poisoned_outputs(monkeypatch):
    """Poisoned outputs; host-to-host packing pipelined in pieces of a few rows."""
    from genotile.backends.cuda import cupy_pack

    monkeypatch.setattr(cupy_common, "POISON", True)
    monkeypatch.setattr(cupy_pack, "SUB_BYTES", 3000)


def genotypes(rows, fields, seed, missing):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 3, size=(rows, fields)).astype(np.uint8)
    if missing:
        codes[rng.random((rows, fields)) < missing] = MISSING
    return codes


def categorical(alphabet, rows, fields, seed):
    rng = np.random.default_rng(seed)
    symbols = np.frombuffer(b"ACGT" if alphabet is NUCLEOTIDE else b"ACGTXYZ", dtype=np.uint8)
    k = rng.choice([1, 2, 2, 3, 4], size=fields)
    col_syms = np.stack([rng.permutation(symbols)[:4] for _ in range(fields)])
    pick = np.minimum(rng.integers(0, 4, size=(rows, fields)), k[None, :] - 1)
    raw = col_syms[np.arange(fields)[None, :], pick]
    odd = rng.random((rows, fields)) < 0.05
    raw[odd] = rng.choice(np.frombuffer(b"N-?" if alphabet is NUCLEOTIDE else b"a-", np.uint8), size=int(odd.sum()))
    return alphabet.encode(raw)


@needs_gpu
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_genotype_planes_equal(shape, missing):
    from genotile.backends.cuda import cupy_pack

    rows, fields = shape
    codes = genotypes(rows, fields, rows + fields, missing)
    for encoding in ("genotype", "genotype_t"):
        layout = genotype_layout(codes, encoding)
        want = genotype_planes(codes, layout)
        got = cupy_pack.genotype_planes(codes, layout)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want), encoding


@needs_gpu
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("alphabet", [NUCLEOTIDE, CATEGORICAL], ids=lambda a: a.name)
def test_categorical_planes_equal(shape, alphabet):
    from genotile.backends.cuda import cupy_pack

    rows, fields = shape
    codes = categorical(alphabet, rows, fields, rows * fields)
    enc = categorical_encoding(symbol_counts(codes), alphabet.has_missing)
    want = categorical_planes(codes, enc)
    got = cupy_pack.categorical_planes(codes, enc)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


def _pack(tmp_path, codes, manifest, gpu):
    out = tmp_path / ("gpu" if gpu else "cpu")
    out.mkdir()
    np.save(tmp_path / "codes.npy", codes)
    plan = Plan(codes.shape[0], 16, 3)
    m, _ = pack(
        tmp_path / "codes.npy", manifest, plan, plan.permutation(), out / "planes.npy", out / "manifest.json", gpu=gpu
    )
    return (out / "planes.npy").read_bytes(), json.dumps(m, sort_keys=True)


@needs_gpu
def test_pack_gpu_equals_cpu(tmp_path, monkeypatch):
    from genotile.store import pack as store

    base = {"n_fields": 0, "input": "x", "input_sha256": "0", "ids": []}
    codes = genotypes(50, 333, 1, 0.1)
    manifest = {**base, "encoding": "genotype", "n_fields": 333, "ids": [f"s{i}" for i in range(50)]}
    monkeypatch.setattr(store, "CHUNK_BYTES", 333 * 7)  # several chunks
    (tmp_path / "g").mkdir()
    assert _pack(tmp_path / "g", codes, manifest, True) == _pack(tmp_path / "g", codes, manifest, False)
    codes = categorical(NUCLEOTIDE, 40, 500, 2)
    manifest = {
        **base,
        "alphabet": "nucleotide",
        "encoding": "nucleotide",
        "n_fields": 500,
        "ids": [f"q{i}" for i in range(40)],
    }
    (tmp_path / "c").mkdir()
    assert _pack(tmp_path / "c", codes, manifest, True) == _pack(tmp_path / "c", codes, manifest, False)
    monkeypatch.delenv("GENOTILE_GPU_PACK", raising=False)
    assert use_gpu_packing(None) is False  # the CPU packs unless told: faster, no CuPy import
    monkeypatch.setenv("GENOTILE_GPU_PACK", "1")
    assert use_gpu_packing(None) is True


def test_gpu_packing_choice_without_gpu(monkeypatch):
    """No GPU: packing stays on the CPU, and asking for the GPU says why it cannot."""
    if HAS_GPU:
        pytest.skip("a GPU is present")
    from genotile.errors import GenotileError

    monkeypatch.delenv("GENOTILE_GPU_PACK", raising=False)
    assert use_gpu_packing(None) is False
    assert use_gpu_packing(False) is False
    with pytest.raises(GenotileError, match="GPU packing"):
        use_gpu_packing(True)
