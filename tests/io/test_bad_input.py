"""Bad inputs and damaged tile files: a clear GenotileError naming the file, and nothing left behind."""

import gzip
import struct
import zipfile

import numpy as np
import pytest
from conftest import make_alignment
from reference import pair_matrix

from genotile import pipeline
from genotile.core.metrics import get_metric
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.io.tilefile import read_tile
from genotile.pairs import stage as pairs_stage
from genotile.pairs.merge import read_tiles

METRICS = ["snp", "hamming"]

VCF_TEXT = (
    "##fileformat=VCFv4.2\n"
    "##contig=<ID=1,length=1000>\n"
    '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
    "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2\n"
    "1\t10\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1\n"
)


def write(path, data: bytes | str):
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def make_unequal(tmp_path):
    return write(tmp_path / "unequal.fa", ">a\nACGTACGT\n>b\nACGTACGT\n>shorty\nACGTACG\n>d\nACGTACGT\n")


def make_duplicate(tmp_path):
    return write(tmp_path / "dups.fa", ">a\nACGT\n>b first\nACGA\n>c\nACGG\n>b second\nACGC\n")


def make_empty(tmp_path):
    return write(tmp_path / "empty.fa", b"")


def make_blank(tmp_path):
    return write(tmp_path / "blank.fa", "\n  \n\t\n")


def make_empty_gz(tmp_path):
    return write(tmp_path / "empty.fa.gz", gzip.compress(b"", mtime=0))


def make_vcf(tmp_path):
    return write(tmp_path / "calls.fa", VCF_TEXT)


def make_vcf_gz(tmp_path):
    return write(tmp_path / "calls.vcf.gz", gzip.compress(VCF_TEXT.encode(), mtime=0))


def make_missing(tmp_path):
    return tmp_path / "does_not_exist.fa"


def make_directory(tmp_path):
    d = tmp_path / "a_directory.fa"
    d.mkdir()
    return d


def make_non_ascii(tmp_path):
    return write(tmp_path / "utf8.fa", ">a\nACGT\n>b\nAC\u00c9T\n".encode("utf-8"))


def make_latin1(tmp_path):
    return write(tmp_path / "latin1.fa", ">a\nACGT\n>b\nAC\u00c9T\n".encode("latin-1"))


def make_truncated_gz(tmp_path):
    records = make_alignment(60, 400, seed=1)
    text = "".join(f">{name}\n{seq}\n" for name, seq in records).encode()
    data = gzip.compress(text, mtime=0)
    return write(tmp_path / "truncated.fa.gz", data[: len(data) // 2])


def make_binary(tmp_path):
    return write(tmp_path / "random.bin", np.random.default_rng(0).integers(0, 256, 3000, dtype=np.uint8).tobytes())


def make_empty_id(tmp_path):
    return write(tmp_path / "noid.fa", ">a\nACGT\n>\nACGA\n")


# (file maker, words the message must contain besides the file's path)
BAD_INPUTS = {
    "unequal_lengths": (make_unequal, ["'shorty'", "length 7", "length 8", "not an alignment"]),
    "duplicate_ids": (make_duplicate, ["duplicate", "'b'", "records 2 and 4"]),
    "empty_file": (make_empty, ["empty"]),
    "blank_file": (make_blank, ["empty"]),
    "empty_gzip": (make_empty_gz, ["empty"]),
    "vcf_as_fasta": (make_vcf, ["not a FASTA", "VCF"]),
    "gzip_vcf_as_fasta": (make_vcf_gz, ["holds genotypes", "not an alignment", "VCF"]),
    "missing_file": (make_missing, ["no such file"]),
    "directory": (make_directory, ["directory"]),
    "non_ascii": (make_non_ascii, ["non-ASCII", "'b'"]),
    "latin1_byte": (make_latin1, ["non-ASCII", "record 2", "'b'", "byte 0xc9"]),
    "truncated_gzip": (make_truncated_gz, ["truncated gzip"]),
    "binary": (make_binary, ["not a FASTA"]),
    "empty_id": (make_empty_id, ["empty ID", "record 2"]),
}


@pytest.mark.parametrize("metrics", [["snp"], ["hamming"], METRICS], ids="+".join)
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_fails_clearly_and_leaves_nothing(tmp_path, list_files, case, metrics):
    maker, words = BAD_INPUTS[case]
    path = maker(tmp_path)
    outdir = tmp_path / "results" / "ds"
    with pytest.raises(GenotileError) as info:
        pipeline.run_all(path, outdir, metrics, block_size=2)
    message = str(info.value)
    assert str(path) in message, f"the message must name the file: {message}"
    for word in words:
        assert word in message, f"{word!r} missing from: {message}"
    assert "\n" not in message
    assert list_files(outdir) == [], "a failed run must leave no file (temporary ones included)"


def test_gzip_fasta_gives_identical_outputs(tmp_path, fasta_writer):
    records = make_alignment(30, 250, seed=7)
    plain = fasta_writer(tmp_path / "aln.fa", records)
    packed = fasta_writer(tmp_path / "aln.fa.gz", records, gz=True)
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    thresholds = {m: int(np.median(pair_matrix([seq for _, seq in records], m))) for m in METRICS}
    for src, out in ((plain, "plain"), (packed, "gz")):
        pipeline.run_all(src, tmp_path / out, METRICS, block_size=7, thresholds=thresholds)
    for m in METRICS:
        for name in ("matrix.tsv", "pairs.tsv.gz"):
            assert (tmp_path / "plain" / m / name).read_bytes() == (tmp_path / "gz" / m / name).read_bytes()
        pairs = gzip.decompress((tmp_path / "gz" / m / "pairs.tsv.gz").read_bytes()).decode().splitlines()
        assert len(pairs) > 1, "the threshold keeps some pairs"


def test_bgzip_and_unwrapped_fasta_read_alike(tmp_path, fasta_writer):
    """BGZF (what bgzip writes), single-line records and CRLF line ends read like wrapped plain text."""
    pysam = pytest.importorskip("pysam")
    records = make_alignment(12, 130, seed=8)
    plain = fasta_writer(tmp_path / "aln.fa", records, width=7)
    oneline = fasta_writer(tmp_path / "oneline.fa", records, width=None, descriptions=False)
    bgz = tmp_path / "aln.fa.bgz"
    pysam.tabix_compress(str(plain), str(bgz))
    crlf = write(tmp_path / "crlf.fa", plain.read_bytes().replace(b"\n", b"\r\n"))
    outs = []
    for k, src in enumerate((plain, oneline, bgz, crlf)):
        pipeline.run_all(src, tmp_path / f"o{k}", METRICS, block_size=5)
        outs.append([(tmp_path / f"o{k}" / m / "matrix.tsv").read_bytes() for m in METRICS])
    assert outs[0] == outs[1] == outs[2] == outs[3]


# ---------------------------------------------------------------- damaged tile files


@pytest.fixture()
def finished_run(tmp_path, fasta_writer):
    """A finished in-process run with 6 tiles per metric (8 vectors, blocks of 3)."""
    fasta = fasta_writer(tmp_path / "aln.fa", make_alignment(8, 70, seed=9))
    out = tmp_path / "out"
    pipeline.run_all(fasta, out, METRICS, block_size=3, thresholds={"snp": 1000})
    plan = Plan(8, 3, 1)
    assert len(plan.tiles()) == 6
    return out, plan


def remerge(out, plan, metric, dest):
    """Rerun the merge stage (matrix, then pairs + summary) on a run's tiles, writing under `dest`."""
    store = out / "store" / get_metric(metric).encoding / "manifest.json"
    paths = pairs_stage.tile_paths(out / metric / "pairs", plan)
    pairs_stage.matrix(paths, store, metric, dest / "matrix.tsv")
    pairs_stage.merge(paths, store, metric, dest / "pairs.tsv.gz", dest / "summary.json", {}, dest / "matrix.tsv")


def test_remerge_of_intact_tiles_reproduces_outputs(finished_run, tmp_path):
    out, plan = finished_run
    dest = tmp_path / "again"
    remerge(out, plan, "snp", dest)
    for name in ("matrix.tsv", "pairs.tsv.gz"):
        assert (dest / name).read_bytes() == (out / "snp" / name).read_bytes()


def member_data_offset(data: bytes, member: str) -> tuple[int, int]:
    """(start, size) of a stored zip member's bytes inside the file."""
    import io

    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(member)
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26 : info.header_offset + 30])
    return info.header_offset + 30 + name_len + extra_len, info.compress_size


def central_directory(data: bytes) -> int:
    import io

    return zipfile.ZipFile(io.BytesIO(data)).start_dir


def damage_tile(path, damage, values="dense.npy"):
    """`values`: the member a value_flip hits (each stage reads, and checks, only its own)."""
    data = path.read_bytes()
    if damage == "truncated_half":
        data = data[: len(data) // 2]
    elif damage == "truncated_one_byte":
        data = data[:-1]
    elif damage == "empty":
        data = b""
    elif damage == "not_a_tile":
        with open(path, "wb") as fh:
            np.savez(fh, a=np.arange(3))
        data = path.read_bytes()
    else:
        flipped = bytearray(data)
        if damage == "compression_method_flip":  # first central directory entry, compression method field
            flipped[central_directory(data) + 10] ^= 0x01
        else:  # a bit in the middle of a member's stored bytes (values, pair index, metadata)
            member = {"value_flip": values, "index_flip": "a.npy", "meta_flip": "__meta__.npy"}[damage]
            start, size = member_data_offset(data, member)
            flipped[start + size - 3] ^= 0x10
        data = bytes(flipped)
    path.write_bytes(data)


@pytest.mark.parametrize("stage", ["matrix", "pairs"])
@pytest.mark.parametrize(
    "damage",
    [
        "truncated_half",
        "truncated_one_byte",
        "empty",
        "not_a_tile",
        "value_flip",
        "index_flip",
        "meta_flip",
        "compression_method_flip",
    ],
)
def test_damaged_tile_refused_by_merge(finished_run, tmp_path, list_files, damage, stage):
    out, plan = finished_run
    victim = out / "snp" / "pairs" / "tile_1_2.npz"
    # the merge does not read the dense block (matrix.tsv's): its values are the snp column's
    damage_tile(victim, damage, values="dense.npy" if stage == "matrix" else "snp.npy")
    dest = tmp_path / "remerged"
    store = out / "store" / "nucleotide" / "manifest.json"
    paths = pairs_stage.tile_paths(out / "snp" / "pairs", plan)
    with pytest.raises(GenotileError) as info:
        if stage == "matrix":
            pairs_stage.matrix(paths, store, "snp", dest / "matrix.tsv")
        else:
            pairs_stage.merge(paths, store, "snp", dest / "pairs.tsv.gz", dest / "summary.json", {})
    message = str(info.value)
    assert str(victim) in message, message
    assert "tile" in message
    assert any(w in message for w in ("corrupted", "truncated", "not a genotile tile")), message
    assert list_files(dest) == []


def test_bit_flips_are_caught_or_harmless(finished_run, tmp_path):
    """Flip bits of a tile file: read_tile refuses it (naming it) or reads the very same tile.

    One bit of every byte, and every bit of the zip central directory and end record (where
    zipfile raises NotImplementedError / RuntimeError for unknown methods, encryption flags...).
    Flips in bookkeeping the reader ignores (timestamps, local header copies) are harmless.
    """
    out, _ = finished_run
    original = out / "snp" / "pairs" / "tile_0_1.npz"
    ref_arrays, ref_meta, ref_sha = read_tile(original)
    data = original.read_bytes()
    start_dir = central_directory(data)
    probe = tmp_path / "flipped_tile.npz"
    refused = harmless = 0
    flips = [(pos, bit) for pos in range(len(data)) for bit in (range(8) if pos >= start_dir else [pos % 8])]
    for pos, bit in flips:
        flipped = bytearray(data)
        flipped[pos] ^= 1 << bit
        probe.write_bytes(flipped)
        try:
            arrays, meta, sha = read_tile(probe)
        except GenotileError as exc:
            assert str(probe) in str(exc)
            refused += 1
            continue
        assert sha == ref_sha and meta == ref_meta and arrays.keys() == ref_arrays.keys(), (pos, bit)
        for name, arr in arrays.items():
            assert arr.dtype == ref_arrays[name].dtype and np.array_equal(arr, ref_arrays[name]), (pos, bit)
        harmless += 1
    assert refused > len(flips) // 2 and refused + harmless == len(flips)


def test_missing_tile_is_reported(finished_run, tmp_path, list_files):
    out, plan = finished_run
    lost = out / "hamming" / "pairs" / "tile_0_2.npz"
    lost.unlink()
    dest = tmp_path / "remerged"
    with pytest.raises(GenotileError) as info:
        remerge(out, plan, "hamming", dest)
    assert str(lost) in str(info.value) and "missing" in str(info.value)
    assert list_files(dest) == []
    # a tile list that leaves a tile out altogether: the merge names the tile that is missing
    paths = [p for p in pairs_stage.tile_paths(out / "hamming" / "pairs", plan) if p != lost]
    with pytest.raises(GenotileError, match=r"1 tile\(s\) missing.*\(0, 2\)"):
        list(read_tiles(paths, plan, get_metric("hamming")))


def test_foreign_and_repeated_tiles_refused(finished_run):
    out, plan = finished_run
    snp_paths = pairs_stage.tile_paths(out / "snp" / "pairs", plan)
    ham_paths = pairs_stage.tile_paths(out / "hamming" / "pairs", plan)
    mixed = [ham_paths[0], *snp_paths[1:]]
    with pytest.raises(GenotileError, match="hamming tile") as info:
        list(read_tiles(mixed, plan, get_metric("snp")))
    assert str(ham_paths[0]) in str(info.value)
    with pytest.raises(GenotileError, match="given twice"):
        list(read_tiles([*snp_paths, snp_paths[2]], plan, get_metric("snp")))


def test_tile_of_another_plan_refused(finished_run, tmp_path):
    """A tile computed with blocks of 2 (tile (3, 3)) does not belong to a plan with blocks of 3."""
    out, plan = finished_run
    other = tmp_path / "other"
    pipeline.run_all(tmp_path / "aln.fa", other, ["snp"], block_size=2)
    stranger = other / "snp" / "pairs" / "tile_3_3.npz"
    paths = [*pairs_stage.tile_paths(out / "snp" / "pairs", plan), stranger]
    with pytest.raises(GenotileError, match=r"not one of this plan's") as info:
        list(read_tiles(paths, plan, get_metric("snp")))
    assert str(stranger) in str(info.value)


def test_failed_run_keeps_earlier_results_intact(finished_run, tmp_path):
    """A damaged tile makes the merge fail without touching the outputs already there."""
    out, plan = finished_run
    before = {p: p.read_bytes() for p in (out / "snp").glob("*") if p.is_file()}
    victim = out / "snp" / "pairs" / "tile_0_0.npz"
    victim.write_bytes(victim.read_bytes()[:100])
    with pytest.raises(GenotileError, match="tile_0_0"):
        remerge(out, plan, "snp", out / "snp")
    after = {p: p.read_bytes() for p in (out / "snp").glob("*") if p.is_file()}
    assert after == before
    assert list((out / "snp").rglob("*.tmp")) == []
