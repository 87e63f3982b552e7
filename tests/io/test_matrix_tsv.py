"""matrix.tsv (io/matrix_tsv.py) against a plain writer: "\\t".join of str / repr(float) per cell.

Both ways of making the rows are checked (numpy's formatting and word gathers, and
text_kernels' compiled loops where numba is installed), each with and without a symmetric
matrix's triangle formatted once, with blocks of a few rows, so that block edges fall inside
the matrix."""

import numpy as np
import pytest

import genotile.io.matrix_tsv as matrix_tsv
from genotile.io.matrix_tsv import write_matrix_tsv
from genotile.io.tsvgz import format_rows

try:
    import numba  # noqa: F401

    WAYS = ["numpy", "numpy-per-block", "compiled", "compiled-per-block"]  # per block: no triangle kept
except ImportError:
    WAYS = ["numpy", "numpy-per-block"]


def cell(v) -> str:
    return str(v) if type(v) is int else repr(float(v))  # a bool as a float, as format_column


def plain_text(ids, matrix) -> bytes:
    lines = ["\t".join(["", *ids])]
    lines += [name + "\t" + "\t".join(cell(v) for v in row) for name, row in zip(ids, matrix.tolist(), strict=True)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def symmetric(m):
    return np.triu(m) + np.triu(m, 1).T


def matrices(rng, n):
    distances = symmetric(rng.integers(0, 3000, (n, n)))
    np.fill_diagonal(distances, 0)
    floats = rng.random((n, n)) - 0.5
    floats[rng.random((n, n)) < 0.05] = np.nan
    specials = [-0.0, 0.0, -np.inf, np.inf, 1e-7, 1e22, 5e-324, 0.1, 1 / 3, -1e-300, 1e16, 123.0, 0.0001, -1.5e-5]
    floats.flat[: min(len(specials), floats.size)] = specials[: floats.size]
    kinship = (rng.integers(-3000, 3000, (n, n)) - 2 * rng.integers(0, 3000, (n, n))) / (
        2.0 * rng.integers(1, 50000, (n, n))
    )
    return {
        "distances_int64": distances,
        "distances_uint16": distances.astype(np.uint16),
        "large_ints": symmetric(rng.integers(0, 2**40, (n, n))),
        "negative_ints": rng.integers(-50, 50, (n, n)),
        "extreme_ints": rng.choice(np.array([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max]), (n, n)),
        "uint64": rng.integers(0, 2**63, (n, n), dtype=np.uint64) * 2 + 1,
        "zeros": np.zeros((n, n), dtype=np.int64),
        "symmetric_floats": symmetric(floats),
        "asymmetric_floats": floats,
        "kinship": symmetric(kinship),
        "float32": symmetric(floats).astype(np.float32),
        "few_floats": symmetric(rng.integers(-3, 3, (n, n)) * 0.25),
        "scaled_floats": rng.standard_normal((n, n)) * 10.0 ** rng.integers(-30, 30, (n, n)),
        "bool": rng.random((n, n)) < 0.5,  # repr(float(True)): '1.0'
    }


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("n", [1, 2, 7, 64])
def test_matrix_text_equals_plain_writer(tmp_path, n, way, monkeypatch):
    monkeypatch.setattr(matrix_tsv, "BLOCK_CELLS", 100)  # many blocks of rows, a row or a few each
    limit = 0 if way.startswith("compiled") else 1 << 62
    monkeypatch.setattr(matrix_tsv, "COMPILED_MIN_FLOATS", limit)
    monkeypatch.setattr(matrix_tsv, "COMPILED_MIN_INTS", limit)
    if way.endswith("per-block"):
        monkeypatch.setattr(matrix_tsv, "SYMMETRIC_MAX", 0)
    rng = np.random.default_rng(n)
    ids = [f"s{k}\u00e9" if k % 3 else f"id {k}" for k in range(n)]
    for name, matrix in matrices(rng, n).items():
        assert (matrix_tsv.compiled_kernels(matrix) is not None) == way.startswith("compiled")
        path = tmp_path / f"{name}.tsv"
        write_matrix_tsv(path, ids, matrix)
        expected = plain_text(ids, matrix)
        assert path.read_bytes() == expected, name
        # format_rows (peer_formats' writer) gives the same cells
        rows = [f"{i}\t{row}" for i, row in zip(ids, format_rows(matrix), strict=True)]
        assert ("\n".join(["\t".join(["", *ids]), *rows]) + "\n").encode() == expected, name


def test_wide_rows_in_blocks_of_one_row(tmp_path, monkeypatch):
    """A block smaller than a row holds one row; a non-contiguous (transposed) matrix."""
    monkeypatch.setattr(matrix_tsv, "BLOCK_CELLS", 10)
    rng = np.random.default_rng(5)
    matrix = (rng.integers(-9, 9, (40, 40)) / 7).T
    ids = [f"x{k}" for k in range(40)]
    write_matrix_tsv(tmp_path / "m.tsv", ids, matrix)
    assert (tmp_path / "m.tsv").read_bytes() == plain_text(ids, matrix)
