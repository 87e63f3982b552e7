"""The merge trusts no tile it reads (issue 15): a tile of another threshold or metric parameters,
or one with a valid checksum whose indices lie outside its blocks, is refused by name."""

import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf
from snakerun import random_alignment, write_fasta

from genotile.errors import GenotileError
from genotile.io.planfile import read_plan
from genotile.io.tilefile import read_tile, write_tile
from genotile.pairs import stage as pairs_stage
from genotile.pipeline import run_all


@pytest.fixture()
def snp_run(tmp_path):
    """A finished `genotile run` of 13 sequences in blocks of 5 (tiles (0,0) .. (2,2)), threshold 100."""
    path = tmp_path / "in.fa"
    write_fasta(path, random_alignment(np.random.default_rng(21), 13, 90))
    out = tmp_path / "out"
    run_all(path, out, ["snp"], thresholds={"snp": 100}, block_size=5)
    return out


def merge(out, threshold=100, metric="snp", params=None):
    store = out / "store" / ("nucleotide" if metric == "snp" else "genotype_t")
    mdir = out / metric
    plan = read_plan(store / "plan.json")
    return pairs_stage.merge(
        pairs_stage.tile_paths(mdir / "pairs", plan),
        store / "manifest.json",
        metric,
        mdir / "pairs.tsv.gz",
        mdir / "summary.json",
        {"threshold": threshold, "params": params or {}},
        histogram_out=mdir / "histogram.tsv",
    )


def rewrite(path, change):
    """The tile with `change(arrays, meta)` applied, written with a valid checksum."""
    arrays, meta, _ = read_tile(path)
    change(arrays, meta)
    write_tile(path, arrays, meta)


def test_an_intact_run_merges(snp_run):
    assert merge(snp_run)["pairs_passing"] == 13 * 12 // 2


def test_tiles_of_another_threshold_are_refused(snp_run):
    with pytest.raises(GenotileError, match=r"tile .*tile_0_0.npz: computed with threshold 100, not the current 2;"):
        merge(snp_run, threshold=2)


def test_tile_claiming_the_current_threshold_but_holding_failing_pairs_is_refused(snp_run):
    tile = snp_run / "snp" / "pairs" / "tile_0_0.npz"
    rewrite(tile, lambda arrays, meta: meta.update(threshold=2))  # the first tile the merge reads
    with pytest.raises(GenotileError, match=rf"tile {tile}: holds pairs that do not pass its threshold 2"):
        merge(snp_run, threshold=2)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: a["a"].__setitem__(0, -3), r"pair \(-3, \d+\) is not 0 <= a < b < 13"),
        (lambda a: a["b"].__setitem__(0, a["a"][0]), r"pair \(\d+, \d+\) is not 0 <= a < b < 13"),
        (lambda a: a["b"].__setitem__(0, 13), r"pair \(\d+, \d+\) is not 0 <= a < b < 13"),
        (lambda a: a["a"].__setitem__(1, a["a"][0]) or a["b"].__setitem__(1, a["b"][0]), r"a pair is listed twice"),
        (lambda a: a.update(a=a["a"][1:]), r"its arrays do not all hold its \d+ pairs"),
    ],
)
def test_tile_with_a_valid_checksum_and_bad_indices_is_refused_by_name(snp_run, change, message):
    tile = snp_run / "snp" / "pairs" / "tile_1_2.npz"
    rewrite(tile, lambda arrays, meta: change(arrays))
    with pytest.raises(GenotileError, match=rf"tile {tile}: " + message):
        merge(snp_run)


def test_tile_whose_dense_block_is_not_its_blocks_is_refused_by_the_matrix(snp_run):
    """The dense block is read (and checked) by the matrix stage; the merge, which does not read
    it, still merges the tile's pairs."""
    tile = snp_run / "snp" / "pairs" / "tile_1_2.npz"
    rewrite(tile, lambda arrays, meta: arrays.update(dense_rows=arrays["dense_rows"][::-1].copy()))
    store = snp_run / "store" / "nucleotide"
    plan = read_plan(store / "plan.json")
    tiles = pairs_stage.tile_paths(snp_run / "snp" / "pairs", plan)
    with pytest.raises(GenotileError, match=rf"tile {tile}: its dense block is not over blocks \(1, 2\)"):
        pairs_stage.matrix(tiles, store / "manifest.json", "snp", snp_run / "snp" / "matrix2.tsv")
    assert merge(snp_run)["pairs_passing"] == 13 * 12 // 2


def test_pair_outside_the_tiles_blocks_is_refused(snp_run):
    pairs = snp_run / "snp" / "pairs"
    a_other = read_tile(pairs / "tile_0_0.npz")[0]  # a pair of block 0 alone
    tile = pairs / "tile_1_2.npz"

    def move(arrays):
        arrays["a"][0], arrays["b"][0] = a_other["a"][0], a_other["b"][0]

    rewrite(tile, lambda arrays, meta: move(arrays))
    with pytest.raises(
        GenotileError, match=rf"tile {tile}: pair .* lies in blocks \(0, 0\), not in this tile's blocks"
    ):
        merge(snp_run)


def test_ccc2_tiles_of_other_parameters_are_refused(tmp_path):
    g = random_genotypes(8, 20, seed=22)
    vcf = write_vcf(tmp_path / "in.vcf", vcf_text(g))
    out = tmp_path / "out"
    run_all(vcf, out, ["ccc2"], metric_params={"ccc2": {"multiplier": 4.0}}, block_size=8)
    assert merge(out, threshold=None, metric="ccc2", params={"multiplier": 4.0})["pairs_passing"] == 190
    with pytest.raises(GenotileError, match=r"tile_0_0.npz: computed with metric parameters \{'multiplier': 4.0"):
        merge(out, threshold=None, metric="ccc2", params={"multiplier": 4.5})


def test_tile_read_without_its_dense_block_checks_what_it_reads(snp_run, monkeypatch):
    """read_tile(skip=("dense",)) leaves the dense block out and still refuses a damaged array it
    reads or a file with an array removed; large arrays are hashed in pieces on threads."""
    import zipfile

    from genotile.io import tilefile

    tile = snp_run / "snp" / "pairs" / "tile_1_2.npz"
    whole, meta, digest = read_tile(tile)
    part, meta2, digest2 = read_tile(tile, skip=("dense",))
    assert "dense" in whole and "dense" not in part and (meta, digest) == (meta2, digest2)
    assert all(np.array_equal(part[k], whole[k]) for k in part)
    assert write_tile(snp_run / "again.npz", whole, meta) == digest  # the digest is the content's
    monkeypatch.setattr(tilefile, "DIGEST_PIECE", 16)  # arrays in many pieces, hashed on threads
    small = write_tile(snp_run / "pieces.npz", whole, meta)
    got, _, got_digest = read_tile(snp_run / "pieces.npz")
    assert got_digest == small and all(np.array_equal(got[k], whole[k]) for k in whole)
    # the file without its "a" member: refused, though every array read is intact
    stripped = snp_run / "stripped.npz"
    with zipfile.ZipFile(tile) as src, zipfile.ZipFile(stripped, "w") as dst:
        for item in src.infolist():
            if item.filename != "a.npy":
                dst.writestr(item, src.read(item))
    with pytest.raises(GenotileError, match="checksum mismatch"):
        read_tile(stripped)


@pytest.mark.parametrize("mapped", [True, False])
def test_large_members_read_in_place_the_same_and_are_checked(snp_run, monkeypatch, mapped):
    """Members of at least READ_MIN bytes are read in place of a zipfile read (memory-mapped from
    MAP_MIN bytes, else read with no file descriptor kept), and arrays of at least HASH_MIN bytes
    hashed on threads: the same arrays and digest, read-only, and a flipped byte in one (no zip
    CRC is checked then) is still refused."""
    import struct
    import zipfile

    from genotile.io import tilefile

    tile = snp_run / "snp" / "pairs" / "tile_1_2.npz"
    want, meta, digest = read_tile(tile)
    monkeypatch.setattr(tilefile, "READ_MIN", 1)  # every stored member read in place
    monkeypatch.setattr(tilefile, "MAP_MIN", 1 if mapped else 1 << 40)  # ... mapped, or read
    monkeypatch.setattr(tilefile, "HASH_MIN", 1)  # every array's pieces hashed on threads
    got, meta2, digest2 = read_tile(tile)
    assert (meta2, digest2) == (meta, digest) and set(got) == set(want)
    assert all(isinstance(got[k], np.memmap) == mapped and np.array_equal(got[k], want[k]) for k in want)
    assert not any(got[k].flags.writeable for k in want if k != "meta")
    data = bytearray(tile.read_bytes())
    with zipfile.ZipFile(tile) as zf:
        member = zf.getinfo("dense.npy")
    name_len, extra_len = struct.unpack("<HH", bytes(data[member.header_offset + 26 : member.header_offset + 30]))
    data[member.header_offset + 30 + name_len + extra_len + member.file_size - 1] ^= 0x01  # last byte of dense
    flipped = snp_run / "flipped.npz"
    flipped.write_bytes(bytes(data))
    with pytest.raises(GenotileError, match="checksum mismatch"):
        read_tile(flipped)
    assert "dense" not in read_tile(flipped, skip=("dense",))[0]  # a reader that skips it is unaffected
