"""Shared fixtures: random alignments, FASTA writers and output readers.

Generic helpers only; each is a session-scoped fixture returning a plain
function, so tests (including hypothesis tests) can call it freely.
"""

import gzip
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT / "src"))

BASES = "ACGT"
# Characters that never count for snp: N, gaps, '?' and every IUPAC ambiguity code.
NON_ACGT = "NN--.?RYKMSWBDHV"
PROTEIN = "ACDEFGHIKLMNPQRSTVWY"
PROTEIN_EXTRA = "X-*BZ"
# Printable ASCII without whitespace and '>' (a '>' at a line start would open a record).
PRINTABLE = "".join(chr(c) for c in range(33, 127) if chr(c) != ">")


def make_alignment(
    n: int,
    length: int,
    *,
    seed: int = 0,
    kind: str = "dna",
    p_missing: float = 0.1,
    p_lower: float = 0.2,
    prefix: str = "seq",
) -> list[tuple[str, str]]:
    """A random alignment as [(id, sequence)], IDs `<prefix><i>`.

    kind "dna": every column is constant or holds 2, 3 or 4 distinct bases (when
    n allows, all of them do occur), then entries become N / gap / IUPAC codes with
    probability `p_missing` and lower case with probability `p_lower`.
    kind "protein": columns of 1 to 25 amino-acid-like symbols (X, -, * included).
    kind "ascii": columns of 1 to 60 printable ASCII symbols.
    """
    rng = np.random.default_rng(seed)
    if kind == "dna":
        alphabet, max_symbols = BASES, 4
    elif kind == "protein":
        alphabet, max_symbols = PROTEIN + PROTEIN_EXTRA, len(PROTEIN + PROTEIN_EXTRA)
    elif kind == "ascii":
        alphabet, max_symbols = PRINTABLE, 60
    else:
        raise ValueError(f"unknown kind {kind!r}")
    cols = np.empty((length, n), dtype="<U1")
    for c in range(length):
        k = int(rng.integers(1, max_symbols + 1))
        symbols = rng.choice(list(alphabet), size=k, replace=False)
        weights = rng.dirichlet(np.ones(k))
        col = rng.choice(symbols, size=n, p=weights)
        # make every chosen symbol occur (as far as n allows), at random rows
        shown = min(k, n)
        col[rng.permutation(n)[:shown]] = symbols[:shown]
        cols[c] = col
    seqs = cols.T.copy()
    if kind == "dna" and p_missing > 0:
        mask = rng.random(seqs.shape) < p_missing
        seqs[mask] = rng.choice(list(NON_ACGT), size=int(mask.sum()))
    if p_lower > 0:
        lower = rng.random(seqs.shape) < p_lower
        seqs[lower] = np.char.lower(seqs[lower])
    return [(f"{prefix}{i}", "".join(row)) for i, row in enumerate(seqs)]


def write_fasta(path, records, *, width: int | None = 60, gz: bool = False, descriptions: bool = True) -> Path:
    """Write [(id, seq)] as FASTA (wrapped at `width`, optionally gzip); returns the path.

    With `descriptions`, every third header carries text after the ID, which
    readers must drop (IDs end at the first whitespace).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, (name, seq) in enumerate(records):
        lines.append(f">{name} sample {i} description" if descriptions and i % 3 == 1 else f">{name}")
        if width:
            lines.extend(seq[k : k + width] for k in range(0, len(seq), width))
            if not seq:
                lines.append("")
        else:
            lines.append(seq)
    data = ("\n".join(lines) + "\n").encode("ascii")
    if gz:
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return path


def read_matrix(path) -> tuple[list[str], np.ndarray]:
    """matrix.tsv (snp-dists layout) -> (ids, int64 matrix); checks the layout."""
    lines = Path(path).read_text().splitlines()
    header = lines[0].split("\t")
    assert header[0] == "", "matrix.tsv: the header row must start with an empty cell"
    ids = header[1:]
    rows = [line.split("\t") for line in lines[1:]]
    assert [r[0] for r in rows] == ids, "matrix.tsv: first column differs from the header"
    return ids, np.array([[int(v) for v in r[1:]] for r in rows], dtype=np.int64).reshape(len(ids), len(ids))


def read_pairs(path) -> tuple[list[str], list[tuple]]:
    """pairs.tsv.gz -> (header, [(id1, id2, value, ...)]) with integer values as int."""
    with gzip.open(path, "rt") as fh:
        lines = fh.read().splitlines()
    header = lines[0].split("\t")
    rows = []
    for line in lines[1:]:
        fields = line.split("\t")
        rows.append((fields[0], fields[1], *(int(v) if v.lstrip("-").isdigit() else float(v) for v in fields[2:])))
    return header, rows


def files_under(path) -> list[Path]:
    """Every file (hidden and temporary ones included) below `path`, or [] if it does not exist."""
    path = Path(path)
    return sorted(p for p in path.rglob("*") if not p.is_dir()) if path.exists() else []


@pytest.fixture(scope="session")
def random_alignment():
    return make_alignment


@pytest.fixture(scope="session")
def fasta_writer():
    return write_fasta


@pytest.fixture(scope="session")
def matrix_reader():
    return read_matrix


@pytest.fixture(scope="session")
def pairs_reader():
    return read_pairs


@pytest.fixture(scope="session")
def list_files():
    return files_under


def pytest_collection_modifyitems(config, items):
    """Mark `gpu` every test that the GPU skip helpers guard.

    The helpers (`needs_gpu` and the like in tests/*/test_gpu_*.py and the property tests, the
    module-level `pytestmark` of tests/runtime/test_gpu_slots_device.py) are `skipif` marks
    whose reason names the GPU; a test in a GPU file that runs without one (say, the CPU
    fallback of GPU packing) carries none and stays unmarked. `pytest -m gpu` on a device
    machine then runs exactly the GPU tests, `pytest -m "not gpu"` the rest.
    """
    for item in items:
        if any("GPU" in str(mark.kwargs.get("reason", "")) for mark in item.iter_markers("skipif")):
            item.add_marker(pytest.mark.gpu)
