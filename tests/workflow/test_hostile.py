"""Hostile and broken inputs (issue 9): each edge case has a documented outcome, a correct result
or one clear GenotileError line naming the file and the record; nothing escapes results/.

Config names, the rules' use of shell, safe loading of what the pipeline reads back, FASTA
and VCF edge cases (BOM, CRLF, non-UTF-8 bytes, odd IDs, empty and one-vector inputs,
truncated or damaged gzip/BGZF, a small gzip that expands to 1 GB), and the planning-time
stop of a run that would write every pair.
"""

import ast
import csv
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import make_alignment, write_fasta
from genodata import random_genotypes, vcf_text, write_vcf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import pair_matrix

from genotile import pipeline, report
from genotile.core import limits
from genotile.errors import GenotileError
from genotile.io import fasta
from genotile.io.planfile import read_plan
from genotile.pairs import stage as pairs_stage

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"


def one_line_error(call, *words, path=None) -> str:
    with pytest.raises(GenotileError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    if path is not None:
        assert str(path) in message, message
    for word in words:
        assert word in message, f"{word!r} missing from: {message}"
    return message


# ---------------------------------------------------------------- config and rules


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", "..", "/abs", "a b", "x\ny"])
def test_dataset_names_that_could_escape_results_are_refused(name):
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    config = {"datasets": {name: {"input": "in.fa", "metrics": ["snp"]}}}
    with pytest.raises(WorkflowError) as info:
        validate(config, str(SCHEMA))
    assert "does not match" in str(info.value) and repr(name) in str(info.value)


def test_ordinary_names_and_closed_metric_names():
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    validate({"datasets": {"run_2024-01.v2": {"input": "in.fa", "metrics": ["snp"]}}}, str(SCHEMA))
    for bad in (
        {"datasets": {"d": {"input": "in.fa", "metrics": ["../snp"]}}},
        {"datasets": {"d": {"input": "in.fa", "metrics": ["snp"]}}, "thresholds": {"a/b": 1}},
    ):
        with pytest.raises(WorkflowError):
            validate(bad, str(SCHEMA))


def test_rules_run_no_shell_commands():
    """No rule interpolates a user string (path, name, sample ID) into a shell command: every rule
    runs a Python script (script:), so there is no shell: directive or shell() call at all."""
    files = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    assert len(files) > 3
    for path in files:
        text = path.read_text()
        assert not re.search(r"^\s*(shell|run)\s*:", text, flags=re.MULTILINE), f"{path}: shell:/run: directive"
        assert not re.search(r"\bshell\(|os\.system|subprocess", text), f"{path}: a shell call"
    rules = sum(len(re.findall(r"^(?:rule|checkpoint) \w+:", p.read_text(), flags=re.MULTILINE)) for p in files)
    scripts = sum(len(re.findall(r"^\s+script:", p.read_text(), flags=re.MULTILINE)) for p in files)
    assert scripts == rules - 1, "every rule but `all` runs a script"  # rule all only collects


def _calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
            yield node, owner, name


def test_everything_read_back_is_loaded_safely():
    """Package and scripts: numpy.load never with allow_pickle=True, yaml only safe_load, no pickle,
    no eval/exec (an audit of the source: a new unsafe call fails here)."""
    files = sorted((REPO / "src" / "genotile").rglob("*.py")) + sorted((REPO / "scripts").glob("*.py"))
    np_loads = 0
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
                assert not any(n and n.split(".")[0] in ("pickle", "dill", "marshal", "shelve") for n in names), path
        for node, owner, name in _calls(tree):
            where = f"{path}:{node.lineno}"
            if owner in ("np", "numpy") and name == "load":
                np_loads += 1
                kw = {k.arg: k.value for k in node.keywords}  # absent: numpy's default, False
                flag = kw.get("allow_pickle", ast.Constant(False))
                assert isinstance(flag, ast.Constant) and flag.value is False, f"{where}: np.load may unpickle"
                assert len(node.args) <= 2, f"{where}: allow_pickle passed by position?"
            assert not (owner == "yaml" and name in ("load", "load_all", "unsafe_load", "full_load")), where
            assert not (owner == "" and name in ("eval", "exec")), where
    assert np_loads >= 3


# ---------------------------------------------------------------- files read back


@pytest.fixture()
def finished(tmp_path):
    aln = write_fasta(tmp_path / "aln.fa", make_alignment(9, 80, seed=3))
    out = tmp_path / "out"
    pipeline.run_all(aln, out, ["snp"], block_size=4)
    return out


def rerun_tile(out, tmp_path):
    store = out / "store" / "nucleotide"
    pairs_stage.tile(
        store / "planes.npy",
        store / "manifest.json",
        store / "perm.npy",
        "snp",
        0,
        1,
        threshold=None,
        dense=True,
        backend="numpy",
        tile_out=tmp_path / "t.npz",
    )


def rerun_merge(out, tmp_path):
    store = out / "store" / "nucleotide"
    plan = read_plan(store / "plan.json")
    pairs_stage.merge(
        pairs_stage.tile_paths(out / "snp" / "pairs", plan),
        store / "manifest.json",
        "snp",
        tmp_path / "p.tsv.gz",
        tmp_path / "s.json",
        {},
    )


DAMAGES = {
    "manifest_truncated": ("store/nucleotide/manifest.json", lambda b: b[: len(b) // 2], "not valid JSON"),
    "manifest_list": ("store/nucleotide/manifest.json", lambda b: b"[1, 2]", "not a genotile"),
    "manifest_no_ids": (
        "store/nucleotide/manifest.json",
        lambda b: json.dumps({k: v for k, v in json.loads(b).items() if k != "ids"}).encode(),
        "'ids'",
    ),
    "manifest_not_utf8": ("store/nucleotide/manifest.json", lambda b: b"\xff\xfe" + b, "not valid JSON"),
    "plan_truncated": ("store/nucleotide/plan.json", lambda b: b[:5], "not valid JSON"),
    "perm_truncated": ("store/nucleotide/perm.npy", lambda b: b[: len(b) - 9], "unreadable .npy"),
    "perm_not_a_permutation": ("store/nucleotide/perm.npy", None, "not a permutation"),
    "perm_pickled": ("store/nucleotide/perm.npy", None, "unreadable .npy"),
    "planes_truncated": ("store/nucleotide/planes.npy", lambda b: b[: len(b) - 8], "unreadable .npy"),
    "planes_wrong_dtype": ("store/nucleotide/planes.npy", None, "not the uint64 2-d array"),
}


READ_BY = {"tile": ("manifest", "perm", "planes", "plan"), "merge": ("manifest", "plan")}


@pytest.mark.parametrize(
    ("damage", "stage"), [(d, s) for d in sorted(DAMAGES) for s in READ_BY if d.split("_")[0] in READ_BY[s]]
)
def test_damaged_store_files_are_refused_by_name(finished, tmp_path, damage, stage):
    name, change, words = DAMAGES[damage]
    target = finished / name
    if damage == "perm_not_a_permutation":
        perm = np.load(target, allow_pickle=False)
        perm[0] = perm[1]
        np.save(target, perm, allow_pickle=False)
    elif damage == "perm_pickled":
        np.save(target, np.array([object()] * 9, dtype=object), allow_pickle=True)
    elif damage == "planes_wrong_dtype":
        np.save(target, np.load(target, allow_pickle=False).view(np.int64), allow_pickle=False)
    else:
        target.write_bytes(change(target.read_bytes()))
    if damage.startswith("plan_"):
        one_line_error(lambda: read_plan(target), words, path=target)
        return
    run = rerun_tile if stage == "tile" else rerun_merge
    one_line_error(lambda: run(finished, tmp_path), words, path=target)


# ---------------------------------------------------------------- FASTA edge cases


def run_fasta(tmp_path, data: bytes, name="in.fa", metrics=("snp", "hamming"), **kw):
    path = tmp_path / name
    path.write_bytes(data)
    out = tmp_path / f"out_{name}"
    pipeline.run_all(path, out, list(metrics), block_size=kw.pop("block_size", 2), **kw)
    return path, out


def matrix_text(out, metric="snp"):
    return (out / metric / "matrix.tsv").read_text()


PLAIN = b">a desc\nACGTAC\nGT\n>b\nACGAACGA\n>c\nTCGTACGT\n"


@pytest.mark.parametrize("variant", ["bom", "crlf", "bom_crlf", "blank_lines", "no_final_newline", "gzip", "bgzf"])
def test_fasta_spellings_read_alike(tmp_path, variant):
    """A UTF-8 byte-order mark, CRLF line ends, blank lines and compression change nothing."""
    _, ref = run_fasta(tmp_path, PLAIN, "ref.fa")
    data = {
        "bom": b"\xef\xbb\xbf" + PLAIN,
        "crlf": PLAIN.replace(b"\n", b"\r\n"),
        "bom_crlf": b"\xef\xbb\xbf" + PLAIN.replace(b"\n", b"\r\n"),
        "blank_lines": b"\n\n" + PLAIN.replace(b"\n>", b"\n\n\n>"),
        "no_final_newline": PLAIN[:-1],
        "gzip": gzip.compress(PLAIN, mtime=0),
        "bgzf": None,
    }[variant]
    if variant == "bgzf":
        pysam = pytest.importorskip("pysam")
        (tmp_path / "plain.fa").write_bytes(PLAIN)
        pysam.tabix_compress(str(tmp_path / "plain.fa"), str(tmp_path / "x.fa.gz"))
        data = (tmp_path / "x.fa.gz").read_bytes()
    _, out = run_fasta(tmp_path, data, f"{variant}.fa")
    for m in ("snp", "hamming"):
        assert matrix_text(out, m) == matrix_text(ref, m)
    assert matrix_text(out).startswith("\ta\tb\tc\n")


def test_non_utf8_header_names_the_record(tmp_path):
    path = tmp_path / "latin1.fa"
    path.write_bytes(b">a\nACGT\n>b\xe9t\xe9\nACGA\n")
    one_line_error(lambda: pipeline.run_all(path, tmp_path / "o", ["snp"]), "record 2", "not UTF-8", "0xe9", path=path)
    # bytes past the ID (the description) are not read: a latin-1 description is fine
    _, out = run_fasta(tmp_path, b">a caf\xe9\nACGT\n>b\nACGA\n", "desc.fa")
    assert matrix_text(out) == "\ta\tb\na\t0\t1\nb\t1\t0\n"


def test_utf8_ids_are_kept_verbatim(tmp_path):
    _, out = run_fasta(tmp_path, ">caf\u00e9\nACGT\n>\u00fcber\nACGA\n".encode(), "utf8.fa")
    assert matrix_text(out).splitlines()[0] == "\tcaf\u00e9\t\u00fcber"


@pytest.mark.parametrize("header", [b"a\x01b", b"a\x7f", b"\x0bb"])
def test_control_characters_in_ids_are_refused(tmp_path, header):
    path = tmp_path / "ctl.fa"
    path.write_bytes(b">ok\nACGT\n>" + header + b"\nACGA\n")
    if header.startswith(b"\x0b"):  # vertical tab is whitespace: the ID before it is empty, as pysam reads it
        one_line_error(lambda: pipeline.run_all(path, tmp_path / "o", ["snp"]), "record 2 has an empty ID", path=path)
        return
    one_line_error(lambda: pipeline.run_all(path, tmp_path / "o", ["snp"]), "record 2", "control character", path=path)


def test_one_sequence_alignment(tmp_path):
    """n = 1: a 1 x 1 matrix holding 0, no pairs, no informative column."""
    _, out = run_fasta(tmp_path, b">only\nACGTN\n", "one.fa")
    for m in ("snp", "hamming"):
        assert matrix_text(out, m) == "\tonly\nonly\t0\n"
        assert gzip.decompress((out / m / "pairs.tsv.gz").read_bytes()).decode() == f"id1\tid2\t{m}\n"
        summary = json.loads((out / m / "summary.json").read_text())
        assert (summary["n_vectors"], summary["pairs_computed"], summary["n_fields_kept"]) == (1, 0, 0)


def test_all_n_columns_count_for_nothing(tmp_path):
    """Columns that are N (or '-') in every sequence: snp ignores them; hamming sees equal symbols."""
    recs = make_alignment(7, 40, seed=5)
    padded = [(name, "NNNN" + seq[:20] + "-N-N" + seq[20:] + "nnnn") for name, seq in recs]
    _, out = run_fasta(tmp_path, "".join(f">{n}\n{s}\n" for n, s in padded).encode(), "alln.fa")
    for m in ("snp", "hamming"):
        _, got = read_int_matrix(out / m / "matrix.tsv")
        assert np.array_equal(got, pair_matrix([s for _, s in recs], m))
    _, out = run_fasta(tmp_path, b">a\nNNN\n>b\nNNN\n>c\nNNN\n", "only_n.fa")
    assert matrix_text(out) == "\ta\tb\tc\na\t0\t0\t0\nb\t0\t0\t0\nc\t0\t0\t0\n"


def read_int_matrix(path):
    lines = Path(path).read_text().splitlines()
    return lines[0].split("\t")[1:], np.array([[int(v) for v in line.split("\t")[1:]] for line in lines[1:]])


def test_zero_length_sequences(tmp_path):
    """All of length 0: every distance 0. One of length 0 among longer ones: not an alignment."""
    _, out = run_fasta(tmp_path, b">a\n>b\n\n>c\n", "empty_seqs.fa")
    assert matrix_text(out, "hamming") == "\ta\tb\tc\na\t0\t0\t0\nb\t0\t0\t0\nc\t0\t0\t0\n"
    path = tmp_path / "one_empty.fa"
    path.write_bytes(b">a\nACGT\n>b\n>c\nACGA\n")
    one_line_error(
        lambda: pipeline.run_all(path, tmp_path / "o", ["snp"]), "'b'", "length 0", "not an alignment", path=path
    )


def bgzf_bytes(tmp_path, data: bytes) -> bytes:
    pysam = pytest.importorskip("pysam")
    (tmp_path / "src.txt").write_bytes(data)
    pysam.tabix_compress(str(tmp_path / "src.txt"), str(tmp_path / "src.txt.gz"), force=True)
    return (tmp_path / "src.txt.gz").read_bytes()


def bgzf_block_ends(data: bytes) -> list[int]:
    """Offsets at which the BGZF blocks of `data` end (BSIZE in each block's extra field)."""
    ends, pos = [], 0
    while pos < len(data):
        pos += int.from_bytes(data[pos + 16 : pos + 18], "little") + 1
        ends.append(pos)
    return ends


def broken_gzips(tmp_path, text: bytes) -> dict[str, tuple[bytes, str]]:
    gz = gzip.compress(text, mtime=0)
    bg = bgzf_bytes(tmp_path, text)
    crc = bytearray(gz)
    crc[-6] ^= 0xFF  # the CRC-32 of the trailer
    body = bytearray(gz)
    body[len(body) // 2] ^= 0x55
    boundary = bgzf_block_ends(bg)[-3]  # cut after a whole block: still valid gzip
    return {
        "gzip_cut_in_half": (gz[: len(gz) // 2], "truncated gzip"),
        "gzip_without_trailer": (gz[:-8], "truncated gzip"),
        "gzip_bad_crc": (bytes(crc), "damaged gzip"),
        "gzip_flipped_byte": (bytes(body), "gzip"),
        "bgzf_cut_in_a_block": (bg[: len(bg) // 2], "BGZF file without its end-of-file block"),
        "bgzf_cut_at_a_block_end": (bg[:boundary], "BGZF file without its end-of-file block"),
        "bgzf_without_eof_block": (bg[:-28], "BGZF file without its end-of-file block"),
    }


def test_broken_gzip_fasta_is_refused_and_htslib_is_quiet(tmp_path, capfd):
    """Truncated or damaged compressed FASTA: one line, never a shorter alignment read silently."""
    recs = make_alignment(400, 700, seed=2)
    text = "".join(f">{n}\n{s}\n" for n, s in recs).encode()
    assert len(bgzf_block_ends(bgzf_bytes(tmp_path, text))) > 4
    for case, (data, words) in broken_gzips(tmp_path, text).items():
        path = tmp_path / f"{case}.fa.gz"
        path.write_bytes(data)
        one_line_error(lambda p=path: pipeline.run_all(p, tmp_path / f"o_{p.name}", ["snp"]), words, path=path)
        assert not (tmp_path / f"o_{path.name}" / "ingest" / "nucleotide.json").exists()
    assert "[E::" not in capfd.readouterr().err and "[W::" not in capfd.readouterr().err


def test_zero_padding_after_the_last_gzip_member_is_ignored(tmp_path):
    """Zeros after the last member (tape-block padding), as GNU gzip takes them: same records."""
    from genotile.io.fasta import raw_records

    text = b">a desc\nACGT\n>b\nAC\n"
    for case, data in {
        "one": gzip.compress(text) + b"\0" * 5000,
        "two": gzip.compress(text[:12]) + gzip.compress(text[12:]) + b"\0",
    }.items():
        path = tmp_path / f"{case}.fa.gz"
        path.write_bytes(data)
        assert list(raw_records(path)) == [(b"a desc", b"ACGT"), (b"b", b"AC")], case
    path = tmp_path / "junk.fa.gz"
    path.write_bytes(gzip.compress(text) + b"\0" * 700 + b"junk")
    one_line_error(lambda: list(raw_records(path)), "after the zero padding", path=path)


@st.composite
def fasta_files(draw):
    """(records, file bytes): random IDs, descriptions, line widths, CRLF, blank lines, BOM."""
    n = draw(st.integers(1, 6))
    records = []
    for k in range(n):
        seq = draw(st.text(alphabet="ACGTN-<acgt*", min_size=0, max_size=90))  # '>' starts a header
        records.append((f"r{k}" + draw(st.text(alphabet="xyz._|", max_size=4)), seq))
    nl = draw(st.sampled_from([b"\n", b"\r\n"]))
    parts = [b"\xef\xbb\xbf"] if draw(st.booleans()) else []
    for name, seq in records:
        desc = draw(st.sampled_from(["", " d", "\tdesc with >", " caf\u00e9"]))
        parts.append(b">" + (name + desc).encode() + nl)
        width = draw(st.integers(1, 100))
        for i in range(0, len(seq), width):
            parts.append(seq[i : i + width].encode() + nl + (nl if draw(st.integers(0, 9)) == 0 else b""))
    data = b"".join(parts)
    if draw(st.booleans()):
        data = data.rstrip(b"\r\n")
    return records, data


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=fasta_files(), chunk=st.integers(1, 64), packing=st.sampled_from(["plain", "gzip", "members"]))
def test_property_fasta_reader_streams_exactly(tmp_path, monkeypatch, case, chunk, packing):
    """Whatever the chunk size (record, line and CRLF boundaries fall across chunks) and gzip
    packing (one member, one member per 7 bytes), the reader returns the records written."""
    records, data = case
    monkeypatch.setattr(fasta, "CHUNK", chunk)
    if packing == "gzip":
        data = gzip.compress(data, mtime=0)
    elif packing == "members":
        data = b"".join(gzip.compress(data[i : i + 7], mtime=0) for i in range(0, len(data), 7))
    path = tmp_path / "prop.fa"
    path.write_bytes(data)
    got = (
        [(name, raw.tobytes().decode()) for name, raw in fasta.read_alignment(path)]
        if len({len(s) for _, s in records}) == 1
        else None
    )
    if got is not None:
        assert got == records
    raw = [(h.split(None, 1)[0].decode(), s.decode()) for h, s in fasta.raw_records(path)]
    assert raw == records


def test_reader_agrees_with_pysam(tmp_path):
    pysam = pytest.importorskip("pysam")
    recs = make_alignment(40, 333, seed=11)
    path = write_fasta(tmp_path / "a.fa", recs, width=61)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n", 50))
    with pysam.FastxFile(str(path)) as fx:
        theirs = [(r.name, r.sequence) for r in fx]
    ours = [(name, raw.tobytes().decode()) for name, raw in fasta.read_alignment(path)]
    assert ours == theirs == recs


# peak RSS from VmHWM: ru_maxrss would carry the forking pytest process's peak across exec
BOMB = """
import re, sys
from genotile import pipeline
from genotile.pairs import stage as pairs_stage
from genotile.store import stage as store_stage
from genotile.io.planfile import read_plan
m = store_stage.ingest(sys.argv[1], "nucleotide", sys.argv[2], sys.argv[3]).manifest
peak = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)
print(m["n_vectors"], m["n_fields"], m["n_kept"], peak)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak memory is read from /proc (Linux)")
def test_small_gzip_expanding_to_1gb_streams_in_bounded_memory(tmp_path):
    """3 MB of gzip that expands to 1 GB of FASTA (1,000 sequences of 1 Mbp): the ingest reads it
    in a few chunks and one record at a time, peak memory well under 1/5 of the text."""
    bodies = []
    for v in range(4):  # four sequence variants: 4 informative columns
        seq = bytearray(b"ACGT" * 250_000)
        seq[1000 * (v + 1)] = ord("T") if seq[1000 * (v + 1)] != ord("T") else ord("A")
        wrapped = b"\n".join(bytes(seq[i : i + 60]) for i in range(0, len(seq), 60)) + b"\n"
        bodies.append((gzip.compress(wrapped, compresslevel=9, mtime=0), len(wrapped)))
    path, expanded = tmp_path / "bomb.fa.gz", 0
    with open(path, "wb") as fh:  # gzip members back to back are one gzip stream
        for k in range(1000):
            header = f">s{k}\n".encode()
            fh.write(gzip.compress(header, mtime=0) + bodies[k % 4][0])
            expanded += len(header) + bodies[k % 4][1]
    assert expanded > 1e9 and path.stat().st_size < 5e6
    proc = subprocess.run(
        [sys.executable, "-c", BOMB, str(path), str(tmp_path / "c.npy"), str(tmp_path / "m.json")],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    n, fields, kept, peak_kib = map(int, proc.stdout.split())
    assert (n, fields, kept) == (1000, 1_000_000, 4)
    assert peak_kib * 1024 < 200e6, f"peak RSS {peak_kib / 1024:.0f} MiB for a 1 GB expansion"


# ---------------------------------------------------------------- VCF edge cases


def vcf(samples, records) -> str:
    g = random_genotypes(len(samples), 1, seed=0, special=False)
    head = vcf_text(g, samples).split("\n")
    header = [line for line in head if line.startswith("#")]
    return "\n".join(header + records) + "\n"


def test_vcf_with_no_variants_or_no_samples(tmp_path):
    path = tmp_path / "novar.vcf"
    path.write_text(vcf(["s1", "s2"], []))
    for m in ("ibs", "ccc2"):
        one_line_error(lambda m=m: pipeline.run_all(path, tmp_path / m, [m]), "no variants", path=path)
    sites = tmp_path / "sites.vcf"
    sites.write_text(
        "##fileformat=VCFv4.2\n##contig=<ID=1,length=100>\n"
        "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n1\t5\t.\tA\tG\t.\tPASS\t.\n"
    )
    one_line_error(lambda: pipeline.run_all(sites, tmp_path / "s", ["king"]), "no samples", path=sites)


def test_sample_with_every_call_missing(tmp_path):
    """n = 0 pairs (README): ibs n 0, dist_1ibs nan; king nsnp 0, kinship nan; a SNP whose calls are
    all missing has every ccc2 value 0."""
    recs = [
        "1\t10\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1\t./.",
        "1\t20\trs2\tC\tT\t.\tPASS\t.\tGT\t0/0\t0/1\t./.",
        "1\t30\t.\tC\tT\t.\tPASS\t.\tGT\t./.\t./.\t./.",
    ]
    path = tmp_path / "miss.vcf"
    path.write_text(vcf(["s1", "s2", "gone"], recs))
    pipeline.run_all(path, tmp_path / "o", ["ibs", "king", "ccc2"], block_size=2)
    rows = {
        m: gzip.decompress((tmp_path / "o" / m / "pairs.tsv.gz").read_bytes()).decode().splitlines()
        for m in ("ibs", "king", "ccc2")
    }
    assert rows["ibs"][1:] == ["s1\ts2\t2\t2\t0.5", "s1\tgone\t0\t0\tnan", "s2\tgone\t0\t0\tnan"]
    assert rows["king"][2:] == ["s1\tgone\t0\t0\t0\tnan", "s2\tgone\t0\t0\t0\tnan"]
    assert [r.split("\t")[2:] for r in rows["ccc2"] if "1:30:C:T" in r] == [["0.0"] * 4] * 2


def test_ids_with_spaces_quotes_and_hashes_stay_parseable(tmp_path):
    """Sample IDs are written verbatim; the outputs read back with quoting and comments off."""
    names = ["s 1", '"quoted', "#hash", "NA", "x,y"]
    g = random_genotypes(5, 30, seed=4, special=False)
    path = write_vcf(tmp_path / "odd.vcf.gz", vcf_text(g, names))
    pipeline.run_all(path, tmp_path / "o", ["ibs"], block_size=2)
    header, rows = report.read_pairs(tmp_path / "o" / "ibs" / "pairs.tsv.gz")
    assert header == ["id1", "id2", "ibs_count", "n", "dist_1ibs"]
    assert [r[:2] for r in rows] == [[a, b] for i, a in enumerate(names) for b in names[i + 1 :]]
    ids, values = report.read_matrix(tmp_path / "o" / "ibs" / "matrix.tsv")
    assert ids == names and values.shape == (5, 5)
    with open(tmp_path / "o" / "ibs" / "matrix.tsv", newline="", encoding="utf-8") as fh:
        assert [r[0] for r in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)][1:] == names


def test_bad_sample_and_variant_ids_are_refused(tmp_path):
    text = vcf_text(random_genotypes(3, 4, seed=1, special=False), ["s1", "s2", "s3"])
    latin = tmp_path / "latin1.vcf"
    latin.write_bytes(text.replace("\ts2", "\ts\u00e92").encode("latin-1"))
    one_line_error(lambda: pipeline.run_all(latin, tmp_path / "a", ["ibs"]), "not UTF-8", "0xe9", path=latin)
    empty = tmp_path / "empty_name.vcf"
    empty.write_text(text.replace("\ts2\t", "\t\t"))
    one_line_error(lambda: pipeline.run_all(empty, tmp_path / "b", ["ibs"]), "empty sample ID", "column 11", path=empty)
    ctl = tmp_path / "ctl.vcf"
    ctl.write_text(text.replace("\tGT\t", "\tGT\t", 1).replace("\t.\tA\tG", "\trs\x01x\tA\tG", 1))
    one_line_error(lambda: pipeline.run_all(ctl, tmp_path / "c", ["ccc2"]), "variant", "control character", path=ctl)


def test_vcf_bom_is_refused_and_crlf_reads_alike(tmp_path):
    text = vcf_text(random_genotypes(6, 40, seed=2), [f"s{i}" for i in range(6)])
    bom = tmp_path / "bom.vcf"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    one_line_error(lambda: pipeline.run_all(bom, tmp_path / "b", ["ibs"]), "byte-order mark", path=bom)
    outs = []
    for name, data in (("lf.vcf", text), ("crlf.vcf", text.replace("\n", "\r\n"))):
        (tmp_path / name).write_bytes(data.encode())
        pipeline.run_all(tmp_path / name, tmp_path / f"o_{name}", ["ibs", "king"], block_size=4)
        outs.append([(tmp_path / f"o_{name}" / m / "pairs.tsv.gz").read_bytes() for m in ("ibs", "king")])
    assert outs[0] == outs[1]


@pytest.mark.parametrize("fast", [True, False], ids=["fast_path", "cyvcf2"])
def test_broken_gzip_vcf_is_refused_and_htslib_is_quiet(tmp_path, capfd, monkeypatch, fast):
    from genotile.io.readers import vcf as vcf_module

    monkeypatch.setattr(vcf_module, "FAST_PATH", fast)  # the fast path: vcf_fast.py
    text = vcf_text(random_genotypes(30, 3000, seed=6, special=False)).encode()
    for case, (data, words) in broken_gzips(tmp_path, text).items():
        if case == "gzip_flipped_byte":
            words = ""  # where the flip lands decides the message (bad data, bad CRC): any clear line
        path = tmp_path / f"{case}.vcf.gz"
        path.write_bytes(data)
        one_line_error(lambda p=path: pipeline.run_all(p, tmp_path / f"o_{p.name}", ["ibs"]), words, path=path)
    err = capfd.readouterr().err
    assert "[E::" not in err and "[W::" not in err, err[-2000:]


# ---------------------------------------------------------------- resource limits


def test_null_threshold_past_pairs_max_stops_at_planning():
    limits.check_pairs_bound(20_001, ["snp"], 200_010_000)
    limits.check_pairs_bound(10**6, [], 10)  # every metric has a threshold: bounded by it
    message = one_line_error(
        lambda: limits.check_pairs_bound(10**6, ["ibs", "king"], 200_000_000, "dataset big: "),
        "dataset big",
        "ibs, king",
        "499,999,500,000 pairs",
        "1,000,000 vectors",
        "pairs_max",
    )
    assert "set a threshold" in message


def test_workflow_stops_at_the_plan_with_the_numbers(tmp_path):
    from snakerun import snakemake

    aln = write_fasta(tmp_path / "aln.fa", make_alignment(30, 50, seed=1))
    config = {
        "datasets": {"d": {"input": str(aln), "metrics": ["snp", "hamming"]}},
        "thresholds": {"snp": 5},
        "pairs_max": 400,
    }
    proc = snakemake(tmp_path, config, check=False)
    assert proc.returncode != 0
    assert (
        "genotile error: dataset d: hamming with a null threshold would write every one of the 435 pairs" in proc.stderr
    ), proc.stderr[-3000:]
    # the refused metric stops at its plan, before any of its tiles; snp's store (another
    # encoding, a job of its own) may have planned and run its tiles meanwhile: they are kept
    assert not list((tmp_path / "results" / "d").glob("hamming/pairs/*.npz")), "no hamming tile ran"
    config["pairs_max"] = 435
    snakemake(tmp_path, config)
    assert (tmp_path / "results" / "d" / "hamming" / "pairs.tsv.gz").exists()


def test_diagnose_says_why_a_gzip_stream_breaks(tmp_path):
    """gzcheck.diagnose (used in VCF errors): None for whole streams of one or many members and for
    plain text; a reason for truncated or damaged ones."""
    from genotile.io.gzcheck import diagnose

    text = b"".join(b"line %d of some text\n" % k for k in range(5000))
    whole = {
        "plain.txt": text,
        "one.gz": gzip.compress(text, mtime=0),
        "many.gz": gzip.compress(text[:100], mtime=0) + gzip.compress(text[100:], mtime=0),
        "bgzf.gz": bgzf_bytes(tmp_path, text),
    }
    for name, data in whole.items():
        (tmp_path / name).write_bytes(data)
        assert diagnose(tmp_path / name) is None, name
    for case, (data, _words) in broken_gzips(tmp_path, text).items():
        (tmp_path / case).write_bytes(data)
        why = diagnose(tmp_path / case)
        if case.startswith("bgzf_cut_at") or case == "bgzf_without_eof_block":
            assert why is None, "a cut at a block end is valid gzip: only check_bgzf_end sees it"
        else:
            assert why and ("truncated" in why or "damaged" in why), (case, why)
