"""The report's plots drawn right (issue 28): the heatmap clusters on the distances themselves
(average linkage on the condensed matrix, king on 0.5 - kinship) without a warning, its title
clear of the dendrogram and its colours scaled to the pairs, not the diagonal; the histogram
marks the threshold; the king plot shows every pair."""

import gzip
import json
import warnings

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, leaves_list, linkage
from scipy.spatial.distance import squareform

from genotile import report


def write_matrix(path, ids, values):
    lines = ["\t" + "\t".join(ids)] + [
        f"{i}\t" + "\t".join(repr(float(v)) for v in row) for i, row in zip(ids, values, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")


def king_families():
    """Kinship of three families of four (0.25 within, 0.5 on the diagonal), 0.0 +- noise across."""
    rng = np.random.default_rng(3)
    n = 12
    k = rng.normal(0.0, 0.01, (n, n))
    for f in range(3):
        k[4 * f : 4 * f + 4, 4 * f : 4 * f + 4] = 0.25 + rng.normal(0, 0.005, (4, 4))
    k = (k + k.T) / 2
    np.fill_diagonal(k, 0.5)
    order = rng.permutation(n)
    return [f"s{i}" for i in range(n)], k[np.ix_(order, order)], order // 4


def test_heatmap_clusters_on_the_distances_without_a_warning(tmp_path):
    ids, kin, family = king_families()
    write_matrix(tmp_path / "matrix.tsv", ids, kin)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SciPy's ClusterWarning on a square matrix, any other
        grid = report.plot_heatmap(tmp_path / "matrix.tsv", "king", tmp_path / "heat.png", 100)
    assert grid is not None
    dist = 0.5 - kin
    np.fill_diagonal(dist, 0.0)
    expected = linkage(squareform((dist + dist.T) / 2, checks=False), method="average")
    assert np.allclose(grid.dendrogram_row.linkage, expected)
    assert grid.dendrogram_row.reordered_ind == leaves_list(expected).tolist()
    # the three families are the three clusters of the tree
    clusters = fcluster(grid.dendrogram_row.linkage, 3, criterion="maxclust")
    assert len({(int(c), int(f)) for c, f in zip(clusters, family, strict=True)}) == 3


def test_heatmap_scale_leaves_the_diagonal_out_and_the_title_clears_the_tree(tmp_path):
    ids, kin, _ = king_families()
    write_matrix(tmp_path / "matrix.tsv", ids, kin)
    grid = report.plot_heatmap(tmp_path / "matrix.tsv", "king", tmp_path / "heat.png", 100)
    mesh = grid.ax_heatmap.collections[0]
    off = kin[~np.eye(len(ids), dtype=bool)]
    assert mesh.norm.vmin == pytest.approx(off.min()) and mesh.norm.vmax == pytest.approx(off.max())
    assert mesh.norm.vmax < 0.3  # the families' 0.25, not the diagonal's 0.5
    assert np.ma.getmaskarray(mesh.get_array()).reshape(len(ids), len(ids)).diagonal().all()  # blank diagonal
    title = grid.figure._suptitle
    assert title is not None and "average linkage on 0.5 - kinship" in title.get_text()
    assert title.get_position()[1] > grid.ax_col_dendrogram.get_position().y1  # above the dendrogram


def test_cluster_distances_of_a_distance_metric_and_of_missing_values():
    values = np.array([[0.0, 2.0, np.nan], [2.0, 0.0, 5.0], [np.nan, 5.0, 0.0]])
    got = report.cluster_distances(values, "snp")
    assert np.array_equal(got, [[0, 2, 5], [2, 0, 5], [5, 5, 0]])  # nan: as far as the farthest
    kin = np.array([[0.5, 0.25, -np.inf], [0.25, 0.5, 0.0], [-np.inf, 0.0, 0.5]])
    assert np.array_equal(report.cluster_distances(kin, "king"), [[0, 0.25, 0.5], [0.25, 0, 0.5], [0.5, 0.5, 0]])


def write_histogram(path, column, edges, counts):
    rows = ["column\tlow\thigh\tcount"] + [
        f"{column}\t{float(lo)!r}\t{float(hi)!r}\t{c}" for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True)
    ]
    path.write_text("\n".join(rows) + "\n")


def test_histogram_marks_the_threshold(tmp_path, monkeypatch):
    write_histogram(tmp_path / "h.tsv", "kinship", np.linspace(-0.1, 0.1, 21), [5] * 20)
    lines = []
    original = report._save
    monkeypatch.setattr(report, "_save", lambda fig, out: (lines.extend(fig.axes[0].lines), original(fig, out)))
    report.plot_histogram(tmp_path / "h.tsv", "king", tmp_path / "h.png", threshold=0.0442)
    assert [line.get_xdata()[0] for line in lines] == [0.0442]
    lines.clear()
    report.plot_histogram(tmp_path / "h.tsv", "king", tmp_path / "h.png", threshold=0.3)  # off the bins: still shown
    assert lines[0].get_xdata()[0] == 0.3 and lines[0].axes.get_xlim()[1] > 0.3
    lines.clear()
    report.plot_histogram(tmp_path / "h.tsv", "king", tmp_path / "h.png")
    assert lines == []  # a null threshold: no line


def test_run_threshold_reads_the_summary(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"threshold": 0.0442}))
    assert report.run_threshold(tmp_path / "summary.json") == 0.0442
    (tmp_path / "summary.json").write_text(json.dumps({"threshold": None}))
    assert report.run_threshold(tmp_path / "summary.json") is None
    assert report.run_threshold(tmp_path / "none.json") is None


def test_king_plot_shows_every_pair_beside_those_passing(tmp_path, monkeypatch):
    with gzip.open(tmp_path / "pairs.tsv.gz", "wt") as fh:
        fh.write("id1\tid2\tnsnp\thethet\tibs0\tkinship\n")
        fh.write("a\tb\t1000\t300\t0\t0.25\nc\td\t1000\t280\t18\t0.24\n")
    write_histogram(
        tmp_path / "histogram.tsv", "kinship", np.linspace(-0.2, 0.5, 71), [0] * 15 + [900] * 10 + [0] * 43 + [2, 0]
    )
    figures = []
    original = report._save
    monkeypatch.setattr(report, "_save", lambda fig, out: (figures.append(fig), original(fig, out)))
    report.plot_king(tmp_path / "pairs.tsv.gz", tmp_path / "k.png", tmp_path / "histogram.tsv", 0.0442)
    left, right = figures[0].axes[:2]  # then the density's colour bar
    assert "2 pairs with kinship >= 0.0442" in left.get_title()
    assert "all 9002 pairs" in right.get_title()
    assert sum(p.get_width() for p in right.patches) == 9002
    assert left.collections[0].get_array().sum() == 2  # the density holds the passing pairs


def test_heatmap_ids_fit_their_rows(tmp_path):
    """60 IDs (the example alignment): each label's font no taller than its row, so none overlap."""
    rng = np.random.default_rng(0)
    ids = [f"sample_{k:02d}" for k in range(60)]
    d = rng.integers(0, 150, (60, 60)).astype(float)
    d = np.triu(d, 1) + np.triu(d, 1).T
    write_matrix(tmp_path / "matrix.tsv", ids, d)
    grid = report.plot_heatmap(tmp_path / "matrix.tsv", "snp", tmp_path / "heat.png", 100)
    ax = grid.ax_heatmap
    row_points = ax.get_position().height * grid.figure.get_figheight() * 72 / len(ids)
    sizes = {label.get_fontsize() for label in ax.get_yticklabels() + ax.get_xticklabels()}
    assert len(ax.get_yticklabels()) == 60 and max(sizes) <= row_points


def test_king_plot_scales_print_plain_numbers_and_draw_single_pairs(tmp_path, monkeypatch):
    with gzip.open(tmp_path / "pairs.tsv.gz", "wt") as fh:
        fh.write("id1\tid2\tnsnp\thethet\tibs0\tkinship\n")
        fh.writelines(f"a{k}\tb{k}\t1000\t300\t{k % 9}\t{0.05 + 0.002 * k}\n" for k in range(60))
    write_histogram(tmp_path / "histogram.tsv", "kinship", np.linspace(-0.2, 0.5, 71), [1] * 70)
    figures = []
    original = report._save
    monkeypatch.setattr(report, "_save", lambda fig, out: (figures.append(fig), original(fig, out)))
    report.plot_king(tmp_path / "pairs.tsv.gz", tmp_path / "k.png", tmp_path / "histogram.tsv", 0.0442)
    left, right, colour_bar = figures[0].axes
    figures[0].canvas.draw()
    ticks = [t.get_text() for t in colour_bar.get_yticklabels(which="both") if t.get_text()]
    assert ticks and all("times" not in t and "^" not in t for t in ticks), ticks  # 2, not 2 x 10^0
    assert right.get_xlim()[0] < 1  # a bin of one pair has a visible bar on the log axis
    assert "pairs per hexagon" in colour_bar.get_ylabel()


def test_four_histogram_panels_are_two_rows_of_two(tmp_path, monkeypatch):
    rows = ["column\tlow\thigh\tcount"] + [
        f"ccc_{c}\t{k / 10!r}\t{(k + 1) / 10!r}\t3" for c in ("00", "01", "10", "11") for k in range(10)
    ]
    (tmp_path / "h.tsv").write_text("\n".join(rows) + "\n")
    figures = []
    original = report._save
    monkeypatch.setattr(report, "_save", lambda fig, out: (figures.append(fig), original(fig, out)))
    report.plot_histogram(tmp_path / "h.tsv", "ccc2", tmp_path / "h.png", threshold=0.7)
    panels = figures[0].axes
    assert [ax.get_title() for ax in panels] == ["ccc_00", "ccc_01", "ccc_10", "ccc_11"]
    assert len({round(ax.get_position().y0, 3) for ax in panels}) == 2  # two rows


def test_king_plot_draws_every_pairs_density_from_a_sample_under_the_passing_pairs(tmp_path, monkeypatch):
    """Store rows drawn at random (a random sample of the vectors) give every pair's spread: their
    pairs' kinship and IBS0 equal the tiles' (the API's) for the same vectors, and the plot
    draws them as a grey density with the passing pairs as points over it."""
    import genotile
    from genotile.pairs.sampled import sample_pairs

    rng = np.random.default_rng(5)
    g = rng.integers(0, 3, size=(40, 500))
    g[1] = g[0]  # a duplicate pair, kinship 0.5
    work = tmp_path / "work"
    every = genotile.pairwise(g, metric="king", backend="numpy", workdir=work).pairs
    sampled = sample_pairs(work / "planes.npy", work / "store.json", "king", vectors=12)
    assert (sampled.vectors, sampled.of, sampled.pairs, sampled.every_pair) == (12, 40, 66, False)
    perm = np.load(work / "perm.npy")
    assert sampled.rows.tolist() == sorted(set(sampled.rows.tolist())) and len(sampled.rows) == 12
    assert sampled.rows.max() >= 12  # drawn over every row, not the first ones (an appended part is last)
    ids = [str(k) for k in perm[sampled.rows]]  # the store rows drawn: these input vectors
    want = every[every.id1.isin(ids) & every.id2.isin(ids)]
    assert len(want) == 66
    assert sorted(np.round(sampled.columns["kinship"], 9)) == sorted(np.round(want.kinship.to_numpy(), 9))
    assert sorted(sampled.columns["ibs0"]) == sorted(want.ibs0.to_numpy())
    whole = sample_pairs(work / "planes.npy", work / "store.json", "king")
    assert whole.every_pair and whole.pairs == 780
    with gzip.open(tmp_path / "pairs.tsv.gz", "wt") as fh:
        fh.write("id1\tid2\tnsnp\thethet\tibs0\tkinship\n")
        fh.write("0\t1\t500\t160\t0\t0.5\n")
    write_histogram(
        tmp_path / "histogram.tsv", "kinship", np.linspace(-0.5, 0.5, 101), [0] * 40 + [779] + [0] * 58 + [1]
    )
    figures = []
    original = report._save
    monkeypatch.setattr(report, "_save", lambda fig, out: (figures.append(fig), original(fig, out)))
    report.plot_king(tmp_path / "pairs.tsv.gz", tmp_path / "k.png", tmp_path / "histogram.tsv", 0.0442, sampled)
    left = figures[0].axes[0]
    assert left.get_title() == (
        "1 pairs with kinship >= 0.0442 (red)\nover all 66 pairs of 12 of the 40 vectors drawn at random (grey)"
    )
    density, points = left.collections[:2]
    assert density.get_array().sum() == 66  # the sampled pairs, every one drawn
    assert points.get_offsets().tolist() == [[0.0, 0.5]]  # the passing pair, a point
    report.plot_king(tmp_path / "pairs.tsv.gz", tmp_path / "w.png", tmp_path / "histogram.tsv", 0.0442, whole)
    assert figures[1].axes[0].get_title().endswith("\nover all 780 pairs (grey)")
    assert (tmp_path / "k.png").stat().st_size > 10_000


def test_contiguous_histogram_bins_are_one_filled_outline(tmp_path, monkeypatch):
    """An snp histogram's integer bins (one a value, each 1 wide) and a float column's touching
    bins are drawn as one filled step patch of their counts, not a bar a bin; bins with gaps
    between them as bars."""
    from matplotlib.patches import Rectangle, StepPatch

    figures = []
    original = report._save
    monkeypatch.setattr(report, "_save", lambda fig, out: (figures.append(fig), original(fig, out)))
    rows = ["column\tlow\thigh\tcount"] + [f"snp\t{v}\t{v}\t{v * 3}" for v in range(200)]
    (tmp_path / "h.tsv").write_text("\n".join(rows) + "\n")
    report.plot_histogram(tmp_path / "h.tsv", "snp", tmp_path / "h.png", threshold=10)
    (step,) = [p for p in figures[-1].axes[0].patches if isinstance(p, StepPatch)]
    values, edges, _ = step.get_data()
    assert values.tolist() == [v * 3 for v in range(200)] and edges.tolist() == list(range(201))
    assert not [p for p in figures[-1].axes[0].patches if isinstance(p, Rectangle)]
    rows = ["column\tlow\thigh\tcount", "snp\t0\t0\t4", "snp\t5\t5\t2"]  # a gap: bars
    (tmp_path / "g.tsv").write_text("\n".join(rows) + "\n")
    report.plot_histogram(tmp_path / "g.tsv", "snp", tmp_path / "g.png")
    bars = [p for p in figures[-1].axes[0].patches if isinstance(p, Rectangle)]
    assert [b.get_height() for b in bars] == [4, 2]
