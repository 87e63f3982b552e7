"""Tile kernels against the brute-force definitions (tests/reference.py).

In memory: encode -> planes -> compute_tile over every tile of the seeded plan,
for both metrics and both CPU backends. On disk: pipeline.run_all, the whole
pipeline with the workflow's file layout, whose matrix.tsv / pairs.tsv.gz must
equal the reference exactly and not depend on the seed or the block size.
"""

import functools

import numpy as np
import pytest
from conftest import make_alignment
from cpu_backends import CPU_BACKEND_PARAMS, CPU_BACKENDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import pair_matrix

from genotile import backends, pipeline
from genotile.backends.cpu import numpy_blas, numpy_popcount
from genotile.core.bits import pack_bits
from genotile.core.encode import ALPHABETS, categorical_encoding, categorical_planes, symbol_counts
from genotile.core.metrics import Term, get_metric
from genotile.core.plan import Plan
from genotile.pairs.tile import compute_tile

METRICS = ["snp", "hamming"]
BACKENDS = CPU_BACKENDS
NS = [1, 2, 7, 64, 65, 130]
LENGTHS = [1, 63, 64, 65, 300]
BLOCK_SIZES = [1, 3, 64, 1000]


@functools.cache
def alignment(n, length, seed=0, kind="dna"):
    return tuple(make_alignment(n, length, seed=seed, kind=kind))


@functools.cache
def reference(n, length, metric, seed=0, kind="dna"):
    return pair_matrix([s for _, s in alignment(n, length, seed, kind)], metric)


def encode(seqs, metric_name):
    """(planes in input order, encoding) of a list of sequences for a metric."""
    alpha = ALPHABETS[get_metric(metric_name).encoding]
    raw = np.array([np.frombuffer(s.encode("ascii"), dtype=np.uint8) for s in seqs]).reshape(len(seqs), -1)
    codes = alpha.encode(raw)
    enc = categorical_encoding(symbol_counts(codes), alpha.has_missing)
    return codes, enc


def tiled_matrix(seqs, metric_name, backend, block_size, seed=0, threshold=None):
    """Run compute_tile over every tile of the plan: (matrix, pairs, coverage, encoding).

    pairs: {(a, b): value} over every pair the tiles wrote (a < b, input order);
    coverage: how many tiles wrote each matrix cell.
    """
    metric = get_metric(metric_name)
    n = len(seqs)
    codes, enc = encode(seqs, metric_name)
    plan = Plan(n, block_size, seed)
    perm = plan.permutation()
    planes = categorical_planes(codes[perm], enc)
    matrix = np.full((n, n), -1, dtype=np.int64)
    np.fill_diagonal(matrix, 0)
    coverage = np.zeros((n, n), dtype=np.int64)
    a_all, b_all, v_all = [], [], []
    for bi, bj in plan.tiles():
        arrays, meta = compute_tile(planes, enc.layout, perm, plan, metric, bi, bj, threshold, True, backend)
        assert meta["backend"] == backend
        assert np.all(arrays["a"] < arrays["b"]), "pairs leave as (a, b) with a < b in input order"
        a_all.append(arrays["a"])
        b_all.append(arrays["b"])
        v_all.append(arrays[metric_name])
        rows, cols = arrays["dense_rows"], arrays["dense_cols"]
        matrix[np.ix_(rows, cols)] = arrays["dense"]
        matrix[np.ix_(cols, rows)] = arrays["dense"].T
        coverage[np.ix_(rows, cols)] += 1
        if bi != bj:
            coverage[np.ix_(cols, rows)] += 1
    a, b, v = (np.concatenate(x).tolist() for x in (a_all, b_all, v_all))
    pairs = dict(zip(zip(a, b, strict=True), v, strict=True))
    assert len(pairs) == len(a), "a pair was written by two tiles"
    return matrix, pairs, coverage, enc


def expected_pairs(ref, threshold):
    i, j = np.triu_indices(ref.shape[0], 1)
    v = ref[i, j]
    keep = np.ones(v.shape, dtype=bool) if threshold is None else v <= threshold
    return dict(zip(zip(i[keep].tolist(), j[keep].tolist(), strict=True), v[keep].tolist(), strict=True))


def block_sizes_for(n, length):
    """Every block size on small inputs; the ones that mean thousands of tiles at one length only."""
    sizes = [64, 1000]
    if n <= 65 or length == 300:
        sizes.insert(0, 3)
    if n <= 7 or (n == 65 and length == 65):
        sizes.insert(0, 1)
    return sizes


@pytest.mark.parametrize("backend", CPU_BACKEND_PARAMS)
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("n", NS)
def test_tiles_equal_reference(n, length, metric, backend):
    ref = reference(n, length, metric)
    seqs = [s for _, s in alignment(n, length)]
    for bs in block_sizes_for(n, length):
        matrix, pairs, coverage, _ = tiled_matrix(seqs, metric, backend, bs, seed=bs)
        assert np.array_equal(matrix, ref), f"block size {bs}"
        off = ~np.eye(n, dtype=bool)
        assert np.all(coverage[off] == 1), "every off-diagonal cell comes from exactly one tile"
        assert pairs == expected_pairs(ref, None)
    threshold = int(np.median(ref[np.triu_indices(n, 1)])) if n > 1 else 0
    for bs in (7, 64):
        _, kept, _, _ = tiled_matrix(seqs, metric, backend, bs, seed=bs + 1, threshold=threshold)
        assert kept == expected_pairs(ref, threshold)
        if length >= 63 and n >= 7:  # the threshold really filters
            assert 0 < len(kept) < n * (n - 1) // 2


def test_alignments_exercise_every_plane():
    """The generated data hold the cases the kernels must get right."""
    seqs = [s for _, s in alignment(130, 300)]
    text = "".join(seqs)
    assert set("Nn-") <= set(text) and set("RY") & set(text) and set("acgt") <= set(text)
    _, enc = encode(seqs, "snp")
    assert enc.n_b > 0 and len(enc.s_lengths) == 3, "snp: 2-, 3- and 4-base columns"
    _, enc = encode(seqs, "hamming")
    assert len(enc.s_lengths) >= 5, "hamming: columns with many symbols (N, gaps, IUPAC as symbols)"


@pytest.mark.parametrize("kind", ["protein", "ascii"])
@pytest.mark.parametrize("backend", CPU_BACKEND_PARAMS)
def test_hamming_many_symbols(kind, backend):
    n, length = 70, 150
    seqs = [s for _, s in alignment(n, length, seed=3, kind=kind)]
    _, enc = encode(seqs, "hamming")
    assert len(enc.s_lengths) >= 20, "many S_t planes"
    assert list(enc.s_lengths) == sorted(enc.s_lengths, reverse=True)
    ref = reference(n, length, "hamming", seed=3, kind=kind)
    for bs in (7, 64, 100):
        matrix, _, _, _ = tiled_matrix(seqs, "hamming", backend, bs, seed=5)
        assert np.array_equal(matrix, ref)


def test_snp_semantics_by_hand():
    seqs = ["ACGTNRacgt-", "AGGTAAacGt?", "ncgYAAAcgtA"]
    # pair 0-1: C/G at col 1 (both ACGT); col 4 N/A ignored; col 5 R/A ignored; col 8 g vs G equal (case)
    # pair 0-2: col 0 A/n ignored; col 3 T/Y ignored; col 6 a/A same; -> 0
    # pair 1-2: G/c at col 1; A/n col 0 ignored; col 5 A/A; col 6 a/A; col 7 c/c -> 1
    for backend in BACKENDS:
        snp, _, _, _ = tiled_matrix(seqs, "snp", backend, 2)
        assert snp.tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
        ham, _, _, _ = tiled_matrix(seqs, "hamming", backend, 2)
        assert np.array_equal(ham, pair_matrix(seqs, "hamming"))
        assert ham[0, 1] == 4  # C/G, N/A, R/A, '-'/'?'; g/G and a/a are equal
        assert ham[0, 2] == 5 and ham[1, 2] == 4


# ---------------------------------------------------------------- property test


SYMBOLS = {"dna": "ACGTacgtNn-RY?", "protein": "ACDEFGHIKLMNPQRSTVWYX-*acdxy"}


@st.composite
def alignments(draw):
    kind = draw(st.sampled_from(sorted(SYMBOLS)))
    n = draw(st.integers(1, 12))
    length = draw(st.integers(1, 140))
    alphabet = draw(st.text(alphabet=SYMBOLS[kind], min_size=1, max_size=len(SYMBOLS[kind])))
    seqs = [draw(st.text(alphabet=alphabet, min_size=length, max_size=length)) for _ in range(n)]
    return seqs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    seqs=alignments(),
    block_size=st.integers(1, 14),
    seed=st.integers(0, 2**32 - 1),
    metric=st.sampled_from(METRICS),
    backend=st.sampled_from(BACKENDS),
)
def test_property_kernel_equals_brute_force(seqs, block_size, seed, metric, backend):
    matrix, pairs, _, _ = tiled_matrix(seqs, metric, backend, block_size, seed=seed)
    ref = pair_matrix(seqs, metric)
    assert np.array_equal(matrix, ref)
    assert pairs == expected_pairs(ref, None)


# ---------------------------------------------------------------- whole pipeline on disk


PIPELINE_CASES = [(1, 5), (2, 1), (7, 63), (64, 64), (65, 300), (130, 65)]


def pipeline_block_sizes(n):
    """Single-vector blocks only on tiny inputs (every tile is a file)."""
    return (1, 3, 1000) if n <= 7 else (7, 64) if n <= 65 else (64, 1000)


@pytest.mark.parametrize("backend", CPU_BACKEND_PARAMS)
@pytest.mark.parametrize(("n", "length"), PIPELINE_CASES)
def test_pipeline_outputs_equal_reference(tmp_path, fasta_writer, matrix_reader, pairs_reader, n, length, backend):
    records = alignment(n, length, seed=1)
    ids = [name for name, _ in records]
    fasta = fasta_writer(tmp_path / "aln.fa", records)
    refs = {m: reference(n, length, m, seed=1) for m in METRICS}
    thresholds = {m: (int(np.median(refs[m][np.triu_indices(n, 1)])) if n > 1 else 0) for m in METRICS}
    for bs in pipeline_block_sizes(n):
        for label, thr in (("all", {}), ("thr", thresholds)):
            out = tmp_path / f"out_{bs}_{label}"
            summaries = pipeline.run_all(fasta, out, METRICS, block_size=bs, seed=bs, thresholds=thr, backend=backend)
            for m in METRICS:
                got_ids, matrix = matrix_reader(out / m / "matrix.tsv")
                assert got_ids == ids
                assert np.array_equal(matrix, refs[m])
                header, rows = pairs_reader(out / m / "pairs.tsv.gz")
                assert header == ["id1", "id2", m]
                t = thr.get(m)
                expected = [(ids[i], ids[j], v) for (i, j), v in sorted(expected_pairs(refs[m], t).items())]
                assert rows == expected
                s = summaries[m]
                assert s["pairs_computed"] == n * (n - 1) // 2 and s["pairs_passing"] == len(expected)
                assert s["backend"] == [backend]
                assert len(list((out / m / "pairs").glob("tile_*.npz"))) == len(Plan(n, bs, bs).tiles())


def test_outputs_identical_across_seeds_block_sizes_backends(tmp_path, fasta_writer):
    """The permutation seed, the block size and the backend change no output byte."""
    n, length = 25, 200
    fasta = fasta_writer(tmp_path / "aln.fa", alignment(n, length, seed=2))
    thresholds = {m: int(np.median(reference(n, length, m, seed=2))) for m in METRICS}
    runs = [(seed, bs, backend) for seed in (1, 2, 987654321) for bs in (3, 64, 1000) for backend in BACKENDS]
    runs += [(5, 1, "numpy")]  # 325 one-vector tiles per metric
    outputs = {}
    for k, (seed, bs, backend) in enumerate(runs):
        out = tmp_path / f"run{k}"
        pipeline.run_all(fasta, out, METRICS, block_size=bs, seed=seed, thresholds=thresholds, backend=backend)
        for m in METRICS:
            for name in ("matrix.tsv", "pairs.tsv.gz"):
                outputs.setdefault((m, name), set()).add((out / m / name).read_bytes())
    assert len(outputs) == 4
    for key, variants in outputs.items():
        assert len(variants) == 1, f"{key} differs across seeds / block sizes / backends"


def test_permutations_differ_across_seeds():
    """The seed does permute (so the invariance test above is not vacuous)."""
    perms = {tuple(Plan(40, 3, seed).permutation()) for seed in (1, 2, 987654321)}
    assert len(perms) == 3
    assert all(sorted(p) == list(range(40)) for p in perms)


def test_ids_end_at_first_whitespace(tmp_path, fasta_writer, matrix_reader):
    records = alignment(7, 63, seed=4)
    fasta = fasta_writer(tmp_path / "aln.fa", records, descriptions=True)
    assert "description" in fasta.read_text()
    pipeline.run_all(fasta, tmp_path / "out", ["snp"], block_size=3)
    ids, _ = matrix_reader(tmp_path / "out" / "snp" / "matrix.tsv")
    assert ids == [name for name, _ in records]


# ---------------------------------------------------------------- backend internals


def random_planes(rng, rows, words, density=0.5):
    bits = rng.random((rows, words * 64)) < density
    return pack_bits(bits)


def term_sets(words):
    """A mix of product terms, coefficients and row-sum terms over `words`-word planes."""
    a, b, c = (0, words), (words, 2 * words), (2 * words, 3 * words)
    return {
        "mixed": [Term(1, a, b), Term(1, b, a), Term(-2, c, c), Term(-1, a, a)],
        "rowsum": [Term(1, None, b), Term(1, b, None), Term(-1, c, c)],
        "single": [Term(3, a, c)],
    }


@pytest.mark.parametrize(
    ("chunk_words", "exact_limit"),
    [(1, 2**24), (2, 2**24), (3, 2**24), (7, 2**24), (256, 2**8), (256, 2**9), (256, 3 * 2**8 + 5), (5, 2**11)],
)
def test_numpy_blas_chunking_is_exact(monkeypatch, chunk_words, exact_limit):
    rng = np.random.default_rng(chunk_words * 1000 + exact_limit)
    words = 13
    left = random_planes(rng, 37, 3 * words)
    right = random_planes(rng, 29, 3 * words, density=0.8)
    counts = term_sets(words)
    expected = numpy_popcount.count_matrices(left, right, counts)
    monkeypatch.setattr(numpy_blas, "CHUNK_WORDS", chunk_words)
    monkeypatch.setattr(numpy_blas, "EXACT_LIMIT", exact_limit)
    got = numpy_blas.count_matrices(left, right, counts)
    assert set(got) == set(expected)
    for name in expected:
        assert got[name].dtype == np.int64
        assert np.array_equal(got[name], expected[name]), name


def test_numpy_blas_chunking_pipeline(monkeypatch):
    """Tiny GEMM slices through the real snp / hamming terms still give the reference."""
    monkeypatch.setattr(numpy_blas, "CHUNK_WORDS", 1)
    monkeypatch.setattr(numpy_blas, "EXACT_LIMIT", 2**9)
    seqs = [s for _, s in alignment(65, 300)]
    for metric in METRICS:
        matrix, _, _, _ = tiled_matrix(seqs, metric, "numpy", 20, seed=3)
        assert np.array_equal(matrix, reference(65, 300, metric))


def test_numpy_blas_exact_past_float32_integers():
    """A count above 2**24 (where float32 stops holding every integer) is still exact."""
    words = 2**18 + 3  # 2**24 + 192 set bits per row
    left = np.full((1, words), np.uint64(2**64 - 1), dtype=np.uint64)
    left[0, 0] = np.uint64(2**64 - 2)  # 2**24 + 191: odd, not a float32
    counts = {"x": [Term(1, (0, words), (0, words))], "y": [Term(-2, (0, words), (0, words))]}
    got = numpy_blas.count_matrices(left, left, counts)
    assert int(got["x"][0, 0]) == 2**24 + 191
    assert int(got["y"][0, 0]) == -2 * (2**24 + 191)


def test_backends_registry():
    assert set(backends.available()) >= set(BACKENDS)
    assert backends.resolve("auto") in backends.available()
    with pytest.raises(Exception, match="unknown backend"):
        backends.resolve("nope")
