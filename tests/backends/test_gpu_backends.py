"""GPU backends (cupy-b1, cupy-int8) against the numpy popcount backend, bit for bit.

Skipped where there is no CUDA GPU / CuPy. On a GPU machine: random planes at shapes that
are multiples of no tile size (1 .. 4097 rows, 1 .. 200,000 fields), random terms with
all-ones (None) operands and negative / non-chain coefficients, several seeds, device
outputs poisoned before every kernel, and the real snp / hamming terms of encoded codes.
"""

import numpy as np
import pytest

from genotile import backends
from genotile.backends.cpu import numpy_popcount
from genotile.backends.cuda import cupy_b1, cupy_common, cupy_int8
from genotile.core.encode import CATEGORICAL, NUCLEOTIDE, categorical_encoding, categorical_planes, symbol_counts
from genotile.core.metrics import METRICS, Term

HAS_GPU = cupy_common.has_gpu()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU / CuPy")

GPU_BACKENDS = {
    "cupy-b1": cupy_b1.count_matrices,
    # a second tile shape of the b1 kernel (1 block per SM, 64x64 warp tiles, 4 stages)
    "cupy-b1-128x256": lambda left, right, c: cupy_b1.count_matrices(left, right, c, config="b128x256_w64x64_s4"),
    "cupy-int8": cupy_int8.count_matrices,
}


@pytest.fixture(autouse=True)
def poisoned_outputs(monkeypatch):
    monkeypatch.setattr(cupy_common, "POISON", True)


def random_planes(rng, rows: int, fields: int, density: float) -> np.ndarray:
    """(rows, words) packed planes with zero padding bits past `fields`."""
    words = -(-fields // 64)
    bits = rng.random((rows, words * 64)) < density
    bits[:, fields:] = False
    return np.packbits(bits, axis=1, bitorder="little").view("<u8")


def random_terms(rng, words: int, n_terms: int, coefs) -> list[Term]:
    terms = []
    for _ in range(n_terms):
        w = int(rng.integers(1, words + 1))
        l0, r0 = int(rng.integers(0, words - w + 1)), int(rng.integers(0, words - w + 1))
        coef = int(rng.choice(coefs))
        kind = rng.random()
        if kind < 0.15:
            terms.append(Term(coef, None, (r0, r0 + w)))
        elif kind < 0.3:
            terms.append(Term(coef, (l0, l0 + w), None))
        else:
            terms.append(Term(coef, (l0, l0 + w), (r0, r0 + w)))
    return terms


def check(left, right, counts):
    """Every GPU backend against numpy-popcount (the reference computed once)."""
    want = numpy_popcount.count_matrices(left, right, counts)
    errors = []
    for backend, count_matrices in GPU_BACKENDS.items():
        got = count_matrices(left, right, counts)
        errors += mismatches(backend, got, want)
    assert not errors, f"{left.shape} x {right.shape}: " + "; ".join(errors)


def mismatches(backend, got, want) -> list[str]:
    if set(got) != set(want):
        return [f"{backend}: counts {sorted(got)} != {sorted(want)}"]
    errors = []
    for name in want:
        if got[name].dtype != np.int64 or got[name].shape != want[name].shape:
            errors.append(f"{backend} {name}: {got[name].dtype} {got[name].shape}")
            continue
        bad = np.argwhere(got[name] != want[name])
        if bad.size:
            first = tuple(bad[0])
            errors.append(
                f"{backend} {name}: {len(bad)} of {want[name].size} wrong, first at {list(first)}: "
                f"got {got[name][first]}, want {want[name][first]}"
            )
    return errors


# (rows left, rows right, fields, seeds, terms): small shapes get several seeds; the big
# ones fewer terms so that the numpy reference stays fast.
SHAPES = [
    (1, 1, 1, 3, 4),
    (1, 64, 63, 3, 4),
    (63, 65, 64, 3, 5),
    (64, 64, 65, 3, 5),
    (65, 63, 1000, 3, 6),
    (1000, 1, 200_000, 2, 3),
    (1, 1000, 200_000, 1, 3),
    (63, 1000, 100_000, 1, 2),
    (1000, 1000, 5_000, 2, 4),
    (4097, 65, 3_000, 1, 4),
    (65, 4097, 1_025, 1, 4),
    (4097, 4097, 128, 1, 3),
]
CHAIN = [-4, -2, -1, 1, 2, 4]  # one launch: coefficients that divide each other
ANY = [-3, -2, -1, 1, 2, 3, 5]  # several coefficient chains: several launches, int64 sum


@needs_gpu
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}x{s[2]}")
def test_random_terms(shape):
    m, n, fields, seeds, n_terms = shape
    for seed in range(seeds):
        rng = np.random.default_rng([seed, m, n, fields])
        density = (0.5, 0.1, 0.9)[seed % 3]
        left = random_planes(rng, m, fields, density)
        right = random_planes(rng, n, fields, density)
        words = left.shape[1]
        counts = {
            "chain": random_terms(rng, words, n_terms, CHAIN),
            "any": random_terms(rng, words, n_terms, ANY),
            "full": [Term(1, (0, words), (0, words))],
        }
        check(left, right, counts)


@needs_gpu
def test_diagonal_tile_and_edge_terms():
    rng = np.random.default_rng(7)
    planes = random_planes(rng, 130, 777, 0.4)
    w = planes.shape[1]
    counts = {
        "sums_only": [Term(3, None, (0, w)), Term(-1, (2, w), None)],
        "empty": [],
        "zero_coef": [Term(0, (0, w), (0, w)), Term(-1, (1, 3), (5, 7))],
        # counts beyond int32: K is split into launches / chunks and summed in int64
        "large_coef": [Term(2**24, (0, w), (0, w)), Term(-(2**20) - 1, (0, w - 1), (1, w)), Term(200, None, (0, w))],
    }
    check(planes, planes, counts)  # right is left: a diagonal tile


def categorical_case(alphabet, rows: int, cols: int, seed: int):
    """Random aligned codes with 2..4 symbols per column, some missing."""
    rng = np.random.default_rng(seed)
    if alphabet is NUCLEOTIDE:
        symbols = np.frombuffer(b"ACGT", dtype=np.uint8)
        other = np.frombuffer(b"N-?RY", dtype=np.uint8)
    else:
        symbols = np.frombuffer(b"ACGTXYZ", dtype=np.uint8)
        other = np.frombuffer(b"acN-", dtype=np.uint8)
    k = rng.choice([1, 2, 2, 2, 3, 4], size=cols)
    col_syms = np.stack([rng.permutation(symbols)[:4] for _ in range(cols)])
    pick = np.minimum(rng.integers(0, 4, size=(rows, cols)), k[None, :] - 1)
    raw = col_syms[np.arange(cols)[None, :], pick]
    odd = rng.random((rows, cols)) < 0.03
    raw[odd] = rng.choice(other, size=int(odd.sum()))
    codes = alphabet.encode(raw)
    enc = categorical_encoding(symbol_counts(codes), alphabet.has_missing)
    return codes, enc, categorical_planes(codes, enc)


@needs_gpu
@pytest.mark.parametrize("metric,alphabet", [("snp", NUCLEOTIDE), ("hamming", CATEGORICAL)])
def test_metric_terms(metric, alphabet):
    for seed, (rows, cols) in enumerate([(200, 3000), (70, 20_000)]):
        codes, enc, planes = categorical_case(alphabet, rows, cols, seed)
        counts = METRICS[metric].counts(enc.layout)
        cut = rows // 3 + 1
        check(planes[:cut], planes[cut:], counts)
        check(planes, planes, counts)


@needs_gpu
@pytest.mark.parametrize("metric", ["ibs", "king", "ccc2"])
def test_genotype_metric_terms(metric):
    """The genotype metrics' terms, with missing calls and on complete data."""
    from genotile.core import genotype
    from genotile.core.encode import MISSING

    for seed, (rows, fields, missing) in enumerate([(150, 3000, 0.05), (90, 20_000, 0.0), (1, 64, 0.5)]):
        rng = np.random.default_rng(seed)
        p = rng.uniform(0.02, 0.5, size=fields)
        codes = (rng.random((rows, fields)) < p).astype(np.uint8) + (rng.random((rows, fields)) < p)
        codes[rng.random((rows, fields)) < missing] = MISSING
        layout = genotype.genotype_layout(codes, METRICS[metric].encoding)
        planes = genotype.genotype_planes(codes, layout)
        counts = METRICS[metric].counts(layout)
        cut = rows // 3 + 1
        check(planes[:cut], planes[cut:], counts)
        check(planes, planes, counts)


def test_coefficient_chains_and_bounds():
    """Launch planning (pure Python): chains divide, bounds stay below 2**31."""
    products = [
        cupy_common.Product(c, 0, 0, w) for c, w in [(1, 5), (-2, 3), (3, 7), (4, 1), (-6, 2), (5, 4), (-1, 2**26)]
    ]
    launches = cupy_b1.plan_launches(products)
    for launch in launches:
        assert sum(p.bound for p in launch) <= cupy_common.INT32_MAX
        for a, b in zip(launch, launch[1:], strict=False):
            assert a.coef % b.coef == 0
    assert len(launches) >= 3
    assert sum(p.width * p.coef for launch in launches for p in launch) == sum(p.width * p.coef for p in products)


@needs_gpu
def test_auto_picks_gpu():
    assert backends.resolve("auto") == "cupy-b1"
