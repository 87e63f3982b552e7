"""matrix.tsv by numpy (io/matrix_tsv.py) against the text of tsvgz.format_rows, byte for byte."""

import numpy as np
import pytest

from genotile.io.matrix_tsv import write_matrix_tsv
from genotile.io.tsvgz import format_rows


def reference_text(ids, matrix) -> bytes:
    lines = ["\t".join(["", *ids])] + [f"{name}\t{row}" for name, row in zip(ids, format_rows(matrix), strict=True)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def symmetric(m):
    return np.triu(m) + np.triu(m, 1).T


def matrices(rng, n):
    distances = symmetric(rng.integers(0, 3000, (n, n)))
    np.fill_diagonal(distances, 0)
    floats = rng.random((n, n)) - 0.5
    floats[rng.random((n, n)) < 0.05] = np.nan
    specials = [-0.0, 0.0, -np.inf, np.inf, 1e-7, 1e22, 5e-324, 0.1, 1 / 3, -1e-300]
    floats.flat[: min(len(specials), floats.size)] = specials[: floats.size]
    return {
        "distances_int64": distances,
        "distances_int32": distances.astype(np.int32),
        "large_ints": symmetric(rng.integers(0, 2**40, (n, n))),
        "negative_ints": rng.integers(-50, 50, (n, n)),
        "zeros": np.zeros((n, n), dtype=np.int64),
        "symmetric_floats": symmetric(floats),
        "asymmetric_floats": floats,
        "float32": symmetric(floats).astype(np.float32),
        "few_floats": symmetric(rng.integers(-3, 3, (n, n)) * 0.25),
    }


@pytest.mark.parametrize("n", [1, 2, 7, 64])
def test_matrix_text_equals_format_rows(tmp_path, n, monkeypatch):
    import genotile.io.matrix_tsv as matrix_tsv

    monkeypatch.setattr(matrix_tsv, "BLOCK_BYTES", 256)  # many blocks of rows
    monkeypatch.setattr(matrix_tsv, "WRITE_BYTES", 100)
    rng = np.random.default_rng(n)
    ids = [f"s{k}\u00e9" if k % 3 else f"id {k}" for k in range(n)]
    for name, matrix in matrices(rng, n).items():
        path = tmp_path / f"{name}.tsv"
        write_matrix_tsv(path, ids, matrix)
        assert path.read_bytes() == reference_text(ids, matrix), name
