"""The screen merge trusts no tile (issue 15): matches outside the tile's blocks or its sample are
refused by name even with a valid checksum; a NaN or infinite min_score is refused up front."""

import math

import pytest

from genotile.errors import GenotileError
from genotile.io.tilefile import read_tile, write_tile
from genotile.screen import stage


@pytest.fixture()
def screen_run(tmp_path):
    reads = "".join(f"@r{k}\n{'ACGTTGCA' * 3}{'A' * k}\n+\n{'I' * (24 + k)}\n" for k in range(5))
    (tmp_path / "r.fq").write_text(reads)
    (tmp_path / "s.fa").write_text(">s0\nACGT\n>s1\nTTGC\n>s2\nGGGG\n")
    store = tmp_path / "store"
    stage.ingest(tmp_path / "r.fq", tmp_path / "s.fa", store, sample_block=2, signature_block=2)
    tiles = []
    for i in range(3):
        for j in range(2):
            tiles.append(tmp_path / "tiles" / f"tile_{i}_{j}.npz")
            stage.tile(store, i, j, backend="numpy", tile_out=tiles[-1])
    return store, tiles, tmp_path


def merge(screen_run, min_score=None):
    store, tiles, tmp = screen_run
    return stage.merge(
        tiles, store, min_score=min_score, matches_out=tmp / "m.tsv.gz", summary_out=tmp / "s.json", config={}
    )


def test_intact_tiles_merge(screen_run):
    assert merge(screen_run)["pairs_passing"] == 10  # every read holds s0 and s1, none s2


@pytest.mark.parametrize(
    ("key", "value"),
    [("sample", 4), ("signature", 2), ("position", -1), ("position", 40), ("qual_sum", -5)],
)
def test_match_outside_its_tile_or_sample_is_refused(screen_run, key, value):
    path = screen_run[1][0]  # sample block 0 x signature block 0
    arrays, meta, _ = read_tile(path)
    arrays[key][0] = value
    write_tile(path, arrays, meta)
    with pytest.raises(GenotileError, match=rf"tile {path}: match .* is not in sample block 0 x signature block 0"):
        merge(screen_run)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_min_score_is_refused_before_reading_tiles(screen_run, bad):
    with pytest.raises(GenotileError, match=r"min_score must be a finite number or null"):
        merge(screen_run, min_score=bad)
