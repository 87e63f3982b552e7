"""Bad screening inputs: one clear line naming the file, the line or record, and the problem."""

import gzip

import numpy as np
import pytest

from genotile.errors import GenotileError
from genotile.fastq import read_fastq
from genotile.screen.signatures import read_signatures


def fastq(tmp_path, text, gz=False):
    path = tmp_path / ("s.fq.gz" if gz else "s.fq")
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def test_reads_plain_and_gzip(tmp_path):
    text = "@r1 desc\nACGTN\n+\nIIII#\n\n@r2\nnnA\n+r2\n!!~\n"
    for gz in (False, True):
        recs = list(read_fastq(fastq(tmp_path, text, gz)))
        assert [r[0] for r in recs] == ["r1", "r2"]
        assert bytes(recs[0][1]) == b"ACGTN" and bytes(recs[1][2]) == b"!!~"
        assert all(r[1].dtype == np.uint8 and r[1].size == r[2].size for r in recs)


@pytest.mark.parametrize("text, message", [
    ("", "empty file, no FASTQ records"),
    ("@r1\nACGT\n+\nIII\n", "line 4: record 1 ('r1') has 3 quality characters for 4 bases"),
    ("@r1\nACGT\n+\nIIII\n@r1\nAC\n+\nII\n", "line 5: duplicate sample ID 'r1' (records 1 and 2)"),
    (">r1\nACGT\n", "line 1: record 1 should start with '@', found '>r1' (it looks like FASTA)"),
    ("@r1\nACGT\n+\nIIII\nACGT\n", "line 5: record 2 should start with '@'"),
    ("@\nACGT\n+\nIIII\n", "line 1: record 1 has an empty ID"),
    ("@r1\nACGT\n+\n", "record 1 ('r1') is cut short"),
    ("@r1\nACGT\nIIII\n+\n", "line 3: record 1 ('r1') should have a '+' line here"),
    ("@r1\nACGT\n+\nII I\n", "quality character ' ' at position 3, outside Phred+33"),
    ("@r1\n\n+\n\n", "record 1 ('r1') has an empty sequence"),
])
def test_fastq_errors(tmp_path, text, message):
    path = fastq(tmp_path, text)
    with pytest.raises(GenotileError) as err:
        list(read_fastq(path))
    assert str(path) in str(err.value) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_fastq_missing_file(tmp_path):
    with pytest.raises(GenotileError, match="no such file"):
        list(read_fastq(tmp_path / "nope.fq"))


@pytest.mark.parametrize("text, message", [
    ("", "empty file"),
    (">a\nACGT\n>a\nAC\n", "duplicate signature ID 'a' (records 1 and 2)"),
    (">a\nACGR\n", "signature 'a' (record 1) has 'R' at position 4: signatures may hold A, C, G, T and N only"),
    (">a\nAC\n>b\n>c\nA\n", "signature 'b' (record 2) is empty"),
    ("@r\nACGT\n", "not a FASTA file"),
])
def test_signature_errors(tmp_path, text, message):
    path = tmp_path / "sig.fa"
    path.write_text(text)
    with pytest.raises(GenotileError) as err:
        list(read_signatures(path))
    assert str(path) in str(err.value) and message in str(err.value)


def test_signatures_wrapped_any_case(tmp_path):
    path = tmp_path / "sig.fa"
    path.write_text(">a virus one\nACGT\nnnac\n>b\nT\n")
    assert [(n, bytes(s)) for n, s in read_signatures(path)] == [("a", b"ACGTnnac"), ("b", b"T")]
