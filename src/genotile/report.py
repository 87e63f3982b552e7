"""The report's pieces: plots (matplotlib/seaborn) and tables from a metric's outputs.

Every function reads finished outputs (histogram.tsv, matrix.tsv, pairs.tsv.gz,
summary.json) and writes one file atomically; Snakemake's report() collects them.
IDs are drawn as plain text (a `$...$` in an ID is not matplotlib math text), and a plot
that fails for any reason leaves a placeholder image saying why and a warning in the
rule's log, never a failed run: a picture must not cost the user the results.
"""

import csv
import functools
import gzip
import inspect
import json
import logging
import struct
import zlib
from pathlib import Path

import numpy as np

from genotile.core.metrics import get_metric
from genotile.errors import GenotileError
from genotile.pairs import relatedness
from genotile.report_table import run_summary, screen_row  # noqa: F401 - the report's, as they were
from genotile.util.atomic import atomic_path, write_text

log = logging.getLogger("genotile")
KING_DEGREES = {"1st degree": 0.177, "2nd degree": 0.0884, "3rd degree": 0.0442, "duplicate/MZ": 0.354}


def _skip_set_docstrings() -> None:
    """Keep matplotlib from writing the docstrings of its artists' `set` methods as it imports.

    Each Artist class made on import (about a hundred) has the text of every property it may set
    written into its `set` method's docstring (matplotlib.artist.kwdoc, each setter's own
    docstring parsed): about 0.08 s of matplotlib's 0.3 s import on the 2-core VM, for a
    docstring no report job reads. Here it is empty (the methods, signatures and drawings are
    the same); only where matplotlib.artist is not imported yet, and it has `kwdoc`."""
    import sys

    if "matplotlib.artist" in sys.modules:
        return
    import matplotlib.artist

    if callable(getattr(matplotlib.artist, "kwdoc", None)):
        matplotlib.artist.kwdoc = lambda artist: ""


def _pyplot():
    _skip_set_docstrings()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _subplots(*args, **kwargs):
    """pyplot.subplots' (figure, axes) without pyplot: a Figure on the Agg canvas, which pyplot's
    figure manager, its backend selection and its import (~0.03 s) are not needed for. A plot
    job draws one figure and saves it (`_save`)."""
    _skip_set_docstrings()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=kwargs.pop("figsize", None))
    FigureCanvasAgg(fig)
    return fig, fig.subplots(*args, **kwargs)


def _placeholder(out, why: str) -> None:
    """A small image saying that the plot could not be drawn, and why."""
    try:
        fig, ax = _subplots(figsize=(6, 1.5))
        ax.axis("off")
        ax.text(0.5, 0.5, f"plot not drawn: {why}"[:300], ha="center", va="center", wrap=True, parse_math=False)
        _save(fig, out)
    except Exception:  # noqa: BLE001 - the last resort must not fail either
        with atomic_path(out) as tmp:
            tmp.write_bytes(_blank_png())


def _blank_png() -> bytes:
    """A 1 x 1 white PNG, for when even the placeholder cannot be drawn (no matplotlib)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)  # 1 x 1, 8-bit grey
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff")) + chunk(b"IEND", b"")
    )


def never_fails(plot):
    """A plot function that writes a placeholder and logs a warning instead of raising.

    Errors of the output file itself (disk full, read-only folder) still end the job.
    """

    @functools.wraps(plot)
    def wrapper(*args, **kwargs):
        out = inspect.signature(plot).bind(*args, **kwargs).arguments["out"]
        try:
            return plot(*args, **kwargs)
        except GenotileError:
            raise
        except Exception as exc:  # noqa: BLE001 - any plotting failure
            why = f"{type(exc).__name__}: {' '.join(str(exc).split())}"  # one line
            log.warning("%s failed (%s); writing a placeholder image to %s", plot.__name__, why, out)
            _placeholder(out, why)
            return None

    return wrapper


def plain_labels(ids: list[str]) -> list[str]:
    """IDs as matplotlib draws them verbatim: every `$` escaped, so that no `$...$` in an ID is
    read as math text (matplotlib shows `\\$` as `$` and parses nothing without a bare `$`)."""
    return [name.replace("$", r"\$") for name in ids]


def _save(fig, out) -> None:
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    if fig.canvas.manager is not None:  # a figure of pyplot's (seaborn's clustermap): closed there
        _pyplot().close(fig)


def histogram_table(rows) -> dict[str, list[tuple[str, str, int]]]:
    """{column: [(low, high, count), ...]} of histogram.tsv's rows (column, low, high, count)."""
    table: dict[str, list[tuple[str, str, int]]] = {}
    for column, low, high, count in rows:
        table.setdefault(str(column), []).append((str(low), str(high), int(count)))
    return table


def read_histogram(path) -> dict[str, list[tuple[str, str, int]]]:
    with open(path) as fh:
        return histogram_table(
            (r["column"], r["low"], r["high"], r["count"]) for r in csv.DictReader(fh, delimiter="\t")
        )


@never_fails
def plot_histogram(histogram_tsv, metric: str, out, threshold: float | None = None) -> None:
    """One panel per histogram column, over every pair (not only those passing the threshold),
    the threshold drawn on the metric's own column (a dashed red line; none when null)."""
    _draw_histogram(read_histogram(histogram_tsv), metric, out, threshold)


@never_fails
def plot_histogram_of_tiles(tiles, manifest, metric: str, out, config: dict) -> None:
    """`plot_histogram` of the histogram the merge writes, counted from the tiles themselves
    (pairs/stage.tile_histogram_rows: the same rows, the tiles checked as the merge checks them
    but for their pairs' indices, a GenotileError where one fails), so that the plot job runs
    beside the merge, not after it; the threshold is `config`'s, as summary.json records it."""
    from genotile.pairs import stage

    table = histogram_table(stage.tile_histogram_rows(tiles, manifest, metric, config))
    threshold = config.get("threshold")
    _draw_histogram(table, metric, out, None if threshold is None else float(threshold))


def _draw_histogram(table: dict, metric: str, out, threshold: float | None) -> None:
    thresholded = _thresholded_columns(metric)
    # at most two panels a row: ccc2's four side by side shrink to unreadable in the report's page
    cols = min(len(table), 2)
    rows = -(-len(table) // cols)
    fig, axes = _subplots(rows, cols, figsize=(4.5 * cols, 3.4 * rows), squeeze=False)
    for ax, (column, bins) in zip(axes.flat, table.items(), strict=False):
        finite = [(float(lo), float(hi), c) for lo, hi, c in bins if lo not in ("-inf", "nan") and hi != "inf"]
        lows = np.array([b[0] for b in finite])
        widths = np.array([max(b[1] - b[0], 1.0) if b[0] == b[1] else b[1] - b[0] for b in finite])
        counts = np.array([b[2] for b in finite])
        if lows.size and np.array_equal(lows[1:], lows[:-1] + widths[:-1]):
            # contiguous bins (every histogram genotile writes): one filled outline, not a bar
            # artist a bin (an snp histogram's 2,000 bars took ~0.1 s to make and draw)
            ax.stairs(counts, np.append(lows, lows[-1] + widths[-1]), fill=True, color="#3b6ea8", lw=0)
        else:
            ax.bar(lows, counts, width=widths, align="edge", color="#3b6ea8", edgecolor="none")
        used = np.flatnonzero(counts)
        if used.size:  # zoom on the occupied bins, widened to show the threshold
            low, high = lows[used[0]], lows[used[-1]] + widths[used[-1]]
            if threshold is not None and column in thresholded and np.isfinite(threshold):
                pad = 0.03 * max(high - low, 1e-12)
                low, high = min(low, threshold - pad), max(high, threshold + pad)
            ax.set_xlim(low, high)
        if threshold is not None and column in thresholded:
            ax.axvline(threshold, color="#c0392b", lw=1.2, ls="--", label=f"threshold {threshold:g}")
            ax.legend(fontsize=7, loc="best")
        outside = {
            lo if lo in ("-inf", "nan") else "above": c
            for lo, hi, c in bins
            if c and (lo in ("-inf", "nan") or hi == "inf")
        }
        note = ", ".join(f"{k}: {v}" for k, v in outside.items())
        ax.set_title(f"{column}" + (f"\n(outside the axis: {note})" if note else ""), fontsize=9)
        ax.set_xlabel(column)
        ax.set_ylabel("pairs")
    for ax in axes.flat[len(table) :]:
        ax.remove()
    fig.suptitle(f"{metric}: all pairs", fontsize=10)
    fig.tight_layout()
    _save(fig, out)


def _thresholded_columns(metric: str) -> tuple[str, ...]:
    """The columns a metric's threshold applies to: its dense column, or every CCC entry (ccc2
    keeps a pair where any one passes)."""
    facts = get_metric(metric)
    return facts.histogram_columns if facts.keep == "ge_any" else (facts.dense_column,)


def run_threshold(summary_json) -> float | None:
    """The threshold a metric's results were computed with (its summary.json), or None (null,
    or no summary)."""
    try:
        with open(summary_json) as fh:
            value = json.load(fh).get("threshold")
    except FileNotFoundError:
        return None
    return None if value is None else float(value)


def read_matrix(path) -> tuple[list[str], np.ndarray]:
    with open(path, encoding="utf-8") as fh:
        ids = fh.readline().rstrip("\n").split("\t")[1:]
        # IDs are verbatim text (ids.py): no comment character, no quoting
        values = np.loadtxt(
            fh, delimiter="\t", usecols=range(1, len(ids) + 1), dtype=np.float64, ndmin=2, comments=None
        )
    return ids, values


def cluster_distances(values: np.ndarray, metric: str) -> np.ndarray:
    """The distances the heatmap clusters on, from a metric's square matrix.

    A distance metric's values are its distances; a similarity's are `top - value`, `top` its
    largest finite value (king: 0.5 - kinship, a sample's kinship with itself being 0.5). The
    diagonal is 0; a missing (`nan`) or infinite distance counts as the largest finite one, so
    that a pair with nothing known is not drawn together.

    Parameters
    ----------
    values : (n, n) float64, matrix.tsv's values
    metric : its metric's name

    Returns
    -------
    (n, n) float64, symmetric, >= 0, zero diagonal
    """
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    if get_metric(metric).keep == "le":
        dist = values.copy()
    else:
        dist = (values[finite].max() if finite.any() else 0.0) - values
    dist[~np.isfinite(dist)] = dist[np.isfinite(dist)].max() if np.isfinite(dist).any() else 0.0
    dist = np.maximum((dist + dist.T) / 2, 0.0)  # symmetric to rounding, as linkage asks
    np.fill_diagonal(dist, 0.0)
    return dist


def average_linkage(dist: np.ndarray) -> np.ndarray:
    """UPGMA (average linkage) on the condensed distances themselves: SciPy's linkage matrix."""
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform

    return linkage(squareform(dist, checks=False), method="average")


def colour_limits(values: np.ndarray) -> tuple[float, float]:
    """The colour scale's ends: the off-diagonal finite values' range, so that a diagonal of
    self-values (king's 0.5, a distance's 0) does not compress the scale of the pairs."""
    off = values[~np.eye(len(values), dtype=bool) & np.isfinite(values)]
    if off.size == 0:
        return 0.0, 1.0
    return float(off.min()), float(off.max())


@never_fails
def plot_heatmap(matrix_tsv, metric: str, out, max_vectors: int):
    """Clustered heatmap with dendrograms: average linkage on the pairs' distances
    (`cluster_distances`), the diagonal and missing values masked (blank) and left out of the
    colour scale; a note instead when too large. Returns the seaborn ClusterGrid (None for a
    note)."""
    ids, values = read_matrix(matrix_tsv)
    if len(ids) > max_vectors or len(ids) < 2:
        fig, ax = _subplots(figsize=(5, 1.5))
        ax.axis("off")
        ax.text(
            0.5, 0.5, f"{len(ids)} vectors: no heatmap (report_heatmap_max = {max_vectors})", ha="center", va="center"
        )
        _save(fig, out)
        return None
    _pyplot()  # seaborn's clustermap draws on pyplot's figures
    import seaborn as sns

    column = get_metric(metric).dense_column
    link = average_linkage(cluster_distances(values, metric))
    vmin, vmax = colour_limits(values)
    size = min(12.0, 4 + len(ids) * 0.08)
    labels = plain_labels(ids) if len(ids) <= 80 else False
    grid = sns.clustermap(
        values,
        row_linkage=link,
        col_linkage=link,
        mask=np.eye(len(ids), dtype=bool) | ~np.isfinite(values),
        vmin=vmin,
        vmax=vmax,
        cmap="viridis",
        figsize=(size, size),
        xticklabels=labels,
        yticklabels=labels,
        cbar_kws={"label": column},
    )
    how = {"le": column, "ge": f"{np.max(values[np.isfinite(values)], initial=0.0):g} - {column}"}.get(
        get_metric(metric).keep, f"max - {column}"
    )
    # the title above the whole grid (the column dendrogram included), not on the heatmap's axes
    grid.figure.suptitle(f"{metric}: {column}, average linkage on {how}; diagonal blank", y=1.02, fontsize=10)
    if labels:  # one ID a row: a font that fits the row's height, so that IDs do not overlap
        row_points = grid.ax_heatmap.get_position().height * grid.figure.get_figheight() * 72 / len(ids)
        grid.ax_heatmap.tick_params(labelsize=max(3.0, min(9.0, 0.85 * row_points)))
    _save(grid.figure, out)
    return grid


def read_pairs(path) -> tuple[list[str], list[list[str]]]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader)
        return header, list(reader)


PASSING_POINTS = 20_000  # passing pairs drawn as points over the sampled density; more: a density of their own


@never_fails
def plot_king(pairs_tsv, out, histogram_tsv=None, threshold: float | None = None, sampled=None) -> None:
    """Kinship against the IBS0 proportion, with KING's degree bounds and the IBS0 cut-off
    between parent-offspring and full siblings; beside it, the kinship of every pair
    (histogram.tsv, which counts all of them) with the threshold.

    With a threshold, every pair is shown as a density (hexagonal bins, log counts, grey) from
    `sampled` (pairs/sampled.SampledPairs: every pair of vectors drawn at random from the store,
    or of all of them), and the pairs that passed (pairs.tsv.gz) over it, as points; with a null
    threshold pairs.tsv.gz holds every pair, drawn as the density itself."""
    header, rows = read_pairs(pairs_tsv)
    col = {name: k for k, name in enumerate(header)}
    nsnp = np.array([float(r[col["nsnp"]]) for r in rows])
    kin = np.array([float(r[col["kinship"]]) for r in rows])
    prop = relatedness.ibs0_proportion(np.array([float(r[col["ibs0"]]) for r in rows]), nsnp)
    background = None
    if sampled is not None and threshold is not None and sampled.pairs:
        s_kin = sampled.columns["kinship"]
        s_prop = relatedness.ibs0_proportion(sampled.columns["ibs0"], sampled.columns["nsnp"])
        keep = np.isfinite(s_kin) & np.isfinite(s_prop)
        background = (s_prop[keep], s_kin[keep])
    every = read_histogram(histogram_tsv).get("kinship") if histogram_tsv and Path(histogram_tsv).exists() else None
    fig, axes = _subplots(
        1,
        2 if every else 1,
        figsize=(9.5 if every else 6, 4.2),
        squeeze=False,
        sharey=True,
        # room between the density's colour bar label and the histogram beside it
        gridspec_kw={"width_ratios": [3, 2], "wspace": 0.3} if every else None,
    )
    ax = axes[0][0]
    shown = np.isfinite(kin) & np.isfinite(prop)
    if background is not None and background[0].size:
        hb = ax.hexbin(*background, gridsize=40, bins="log", mincnt=1, cmap="Greys", vmin=0.5)
        label = "pairs per hexagon" if sampled.every_pair else "sampled pairs per hexagon"
        bar = fig.colorbar(hb, ax=ax, label=label, pad=0.02)
        if shown.any() and shown.sum() <= PASSING_POINTS:
            ax.scatter(prop[shown], kin[shown], s=7, color="#c0392b", lw=0, alpha=0.8, label="passed")
        elif shown.any():
            ax.hexbin(prop[shown], kin[shown], gridsize=40, bins="log", mincnt=1, cmap="Reds")
        from matplotlib.ticker import LogFormatter

        bar.ax.yaxis.set_major_formatter(LogFormatter())
        bar.ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5)))
    elif shown.any():
        hb = ax.hexbin(prop[shown], kin[shown], gridsize=40, bins="log", mincnt=1, cmap="viridis")
        bar = fig.colorbar(hb, ax=ax, label="pairs per hexagon", pad=0.02)
        # plain numbers (2, 3, 10, 100) where matplotlib's default log labels print 2 x 10^0
        from matplotlib.ticker import LogFormatter

        bar.ax.yaxis.set_major_formatter(LogFormatter())
        bar.ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5)))
    _king_guides(ax, text=not every)
    ax.axvline(relatedness.IBS0_PO, color="#c0392b", lw=0.8, ls=":")
    ax.text(relatedness.IBS0_PO, 0.265, " PO | FS", va="center", fontsize=7, color="#c0392b")
    ax.set_xlabel("IBS0 / NSNP")
    ax.set_ylabel("KING kinship")
    passing = "every pair" if threshold is None else f"pairs with kinship >= {threshold:g}"
    if background is not None:
        kind = "distinct vectors" if sampled.distinct else "vectors"
        drawn = (
            f"all {sampled.pairs:,} pairs" + (" of distinct vectors" if sampled.distinct else "")
            if sampled.every_pair
            else f"all {sampled.pairs:,} pairs of {sampled.vectors:,} of the {sampled.of:,} {kind} drawn at random"
        )
        ax.set_title(f"{len(rows):,} {passing} (red)\nover {drawn} (grey)", fontsize=8)
        fig.subplots_adjust(top=0.8)  # the two-line title below the figure's
    else:
        ax.set_title(f"{len(rows)} {passing} (pairs.tsv.gz)", fontsize=9)
    if every:
        right = axes[0][1]
        bins = [(float(lo), float(hi), c) for lo, hi, c in every if lo not in ("-inf", "nan") and hi != "inf"]
        lows = np.array([b[0] for b in bins])
        heights = np.array([b[1] - b[0] for b in bins])
        counts = np.array([b[2] for b in bins], dtype=float)
        right.barh(lows, counts, height=heights, align="edge", color="#3b6ea8", edgecolor="none", log=True)
        right.set_xlim(left=0.5)  # a bin of one pair is a bar too (a log axis from 1 draws it 0 wide)
        _king_guides(right, text=True)
        if threshold is not None:
            right.axhline(threshold, color="#c0392b", lw=1.2, ls="--", label=f"threshold {threshold:g}")
            right.legend(fontsize=7, loc="lower right")
        right.set_xlabel("pairs (log)")
        right.set_title(f"kinship of all {int(sum(c for *_, c in every))} pairs (histogram.tsv)", fontsize=9)
        used = np.flatnonzero(counts)
        if used.size:
            low = min(lows[used[0]], np.nanmin(kin) if kin.size else np.inf)
            ax.set_ylim(low, max(lows[used[-1]] + heights[used[-1]], 0.55))
    fig.suptitle("king: kinship against IBS0", fontsize=10)
    _save(fig, out)


def _king_guides(ax, text: bool) -> None:
    """KING's degree bounds as dashed lines (labelled at the right edge when `text`)."""
    for label, value in KING_DEGREES.items():
        ax.axhline(value, color="grey", lw=0.8, ls="--")
        if text:
            ax.text(1.0, value, f" {label}", va="center", fontsize=7, transform=ax.get_yaxis_transform())


class ScreenHits:
    """A screen's kept matches (matches.tsv.gz) as indices into its samples and signatures
    (the store manifest's order, which matches.tsv.gz follows), with the scores as printed."""

    def __init__(self, matches_tsv, manifest_json) -> None:
        with open(manifest_json, encoding="utf-8") as fh:
            manifest = json.load(fh)
        self.samples: list[str] = manifest["sample_ids"]
        self.signatures: list[str] = manifest["signature_ids"]
        sample_at = {name: k for k, name in enumerate(self.samples)}
        signature_at = {name: k for k, name in enumerate(self.signatures)}
        _, rows = read_pairs(matches_tsv)  # sample, signature, position, score
        self.sample = np.array([sample_at[r[0]] for r in rows], dtype=np.int64)
        self.signature = np.array([signature_at[r[1]] for r in rows], dtype=np.int64)
        self.score_text = [r[3] for r in rows]
        self.score = np.array([float(s) for s in self.score_text])

    def samples_per_signature(self) -> np.ndarray:
        """(n_signatures,) int64: samples with a kept match of each signature."""
        return np.bincount(self.signature, minlength=len(self.signatures))


def screen_hits_table(hits: ScreenHits, out) -> None:
    """One row per signature, in the signatures' order: the samples it matches (a kept match:
    score >= min_score) and their fraction of all samples, the lowest and highest score as
    matches.tsv.gz prints them (empty without a match)."""
    counts = hits.samples_per_signature()
    lines = ["signature\tsamples\tfraction\tscore_min\tscore_max"]
    for j, name in enumerate(hits.signatures):
        mine = np.flatnonzero(hits.signature == j)
        low = hits.score_text[mine[np.argmin(hits.score[mine])]] if mine.size else ""
        high = hits.score_text[mine[np.argmax(hits.score[mine])]] if mine.size else ""
        lines.append(f"{name}\t{counts[j]}\t{counts[j] / max(len(hits.samples), 1):.4g}\t{low}\t{high}")
    write_text(out, "\n".join(lines) + "\n")


SCREEN_BARS = 40  # signatures drawn as bars; past it the most matched (hits.tsv lists all)


@never_fails
def plot_screen(hits: ScreenHits, summary_json, out, max_vectors: int) -> None:
    """Left: samples matched per signature (count and fraction of all samples). Right: the score
    of each kept match, signatures by the samples with at least one (samples without a match
    are left out: they would be blank columns), drawn up to `max_vectors` of each."""
    _skip_set_docstrings()
    from matplotlib.ticker import MaxNLocator

    with open(summary_json, encoding="utf-8") as fh:
        summary = json.load(fh)
    counts = hits.samples_per_signature()
    n_samples, n_sigs = len(hits.samples), len(hits.signatures)
    if n_sigs <= SCREEN_BARS:
        shown = np.arange(n_sigs)
        bar_title = "samples matched\nper signature"
    else:
        shown = np.argsort(-counts, kind="stable")[:SCREEN_BARS]  # ranked, ties in the FASTA's order
        bar_title = f"the {SCREEN_BARS} of {n_sigs} signatures\nmatching most samples"
    matched = np.unique(hits.sample)
    heat = 0 < matched.size <= max_vectors and n_sigs <= max_vectors
    same_rows = heat and len(shown) == n_sigs  # the map's rows are the bars': name them once
    cols = matched.size if heat else 0
    heat_width = min(max(2.5, 0.25 * cols), 14.0)
    fig, axes = _subplots(
        1,
        2,
        figsize=(4.2 + heat_width + 1.5, min(2.4 + 0.3 * max(len(shown), n_sigs if heat else 0), 14)),
        gridspec_kw={"width_ratios": [4.2, heat_width + 1.5]},
        squeeze=False,
    )
    bars, right = axes[0]
    y = np.arange(len(shown))
    bars.barh(y, counts[shown], color="#3b6ea8")
    bars.set_yticks(y, plain_labels([hits.signatures[j] for j in shown]), fontsize=8)
    bars.set_ylim(len(shown) - 0.5, -0.5)  # the first signature on top, as in the FASTA and the map
    bars.set_xlim(0, max(int(counts.max(initial=0)), 1) * 1.45)  # room for the labels
    for k, j in enumerate(shown):
        bars.text(counts[j], k, f" {counts[j]} ({100 * counts[j] / max(n_samples, 1):.3g}%)", va="center", fontsize=7)
    bars.xaxis.set_major_locator(MaxNLocator(integer=True))  # samples are whole
    bars.set_xlabel(f"samples matched (of {n_samples})")
    bars.set_title(bar_title, fontsize=9)
    if heat:
        grid = np.full((n_sigs, matched.size), np.nan)
        grid[hits.signature, np.searchsorted(matched, hits.sample)] = hits.score
        image = right.imshow(grid, aspect="auto", cmap="viridis", interpolation="nearest")
        # about 0.6 inch wide whatever the map's width
        fig.colorbar(image, ax=right, label="score (mean quality - 33)", pad=0.02, fraction=0.6 / (heat_width + 1.5))
        if matched.size <= 80:
            right.set_xticks(np.arange(matched.size), plain_labels([hits.samples[k] for k in matched]), rotation=90)
            right.tick_params(axis="x", labelsize=7)
            right.set_xlabel("sample")
        else:  # too many to name: no ticks either
            right.set_xticks([])
            right.set_xlabel(f"{matched.size} samples, in the FASTQ's order")
        if same_rows:
            right.set_yticks(np.arange(n_sigs), [])
        elif n_sigs <= 80:
            right.set_yticks(np.arange(n_sigs), plain_labels(hits.signatures), fontsize=7)
        else:  # the bars rank the signatures; the map keeps them all, unnamed
            right.set_yticks([])
            right.set_ylabel(f"all {n_sigs} signatures, in the FASTA's order")
        right.set_title(
            f"score of each match\n{matched.size} samples with one ({n_samples - matched.size} without: not drawn)",
            fontsize=9,
        )
    else:
        right.axis("off")
        why = "no sample has a match" if matched.size == 0 else f"past report_heatmap_max = {max_vectors}"
        right.text(0.5, 0.5, f"no score map: {why}", ha="center", va="center", fontsize=9)
    min_score = summary.get("min_score")
    kept = "" if min_score is None else f" with score >= {min_score:g}"
    fig.suptitle(
        f"{summary['config'].get('screen', '')}: {summary['pairs_passing']} of {summary['pairs_computed']}"
        f" sample x signature pairs match{kept} ({summary['pairs_matching']} at any score)",
        fontsize=10,
    )
    fig.tight_layout()
    _save(fig, out)
