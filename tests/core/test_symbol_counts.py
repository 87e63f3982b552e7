"""symbol_counts (compares over blocks of rows for the codes a sample holds, bincount for the
columns that hold others) against a plain bincount of every (column, code)."""

import numpy as np
import pytest

from genotile.core.encode import MISSING, NUCLEOTIDE, symbol_counts


def reference(codes: np.ndarray) -> np.ndarray:
    counts = np.zeros((codes.shape[1], 256), dtype=np.int64)
    for c in range(codes.shape[1]):
        counts[c] = np.bincount(codes[:, c], minlength=256)
    return counts


@pytest.mark.parametrize("seed", range(25))
def test_symbol_counts_equal_a_bincount(seed):
    rng = np.random.default_rng(seed)
    n, c = int(rng.integers(0, 900)), int(rng.integers(1, 400))
    symbols = rng.choice(256, size=int(rng.integers(1, 20)), replace=False).astype(np.uint8)
    codes = rng.choice(symbols, size=(n, c))
    if n > 300:  # codes the sampled first rows never show, in a few columns
        codes[rng.integers(256, n, 7), rng.integers(0, c, 7)] = rng.integers(0, 256, 7)
    assert np.array_equal(symbol_counts(codes), reference(codes))


def test_symbol_counts_of_a_memory_map(tmp_path):
    rng = np.random.default_rng(1)
    codes = NUCLEOTIDE.encode(rng.choice(np.frombuffer(b"ACGTN-", np.uint8), size=(700, 333)))
    np.save(tmp_path / "codes.npy", codes)
    counts = symbol_counts(np.load(tmp_path / "codes.npy", mmap_mode="r"))
    assert np.array_equal(counts, reference(codes))
    assert counts[:, MISSING].sum() == np.count_nonzero(codes == MISSING)


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_symbol_counts_on_threads_equal_a_bincount(threads):
    rng = np.random.default_rng(threads)
    codes = NUCLEOTIDE.encode(rng.choice(np.frombuffer(b"ACGTN-", np.uint8), size=(1301, 97)))
    assert np.array_equal(symbol_counts(codes, threads=threads), reference(codes))
