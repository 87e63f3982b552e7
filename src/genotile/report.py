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

from genotile.errors import GenotileError
from genotile.util.atomic import atomic_path, write_text

log = logging.getLogger("genotile")
KING_DEGREES = {"1st degree": 0.177, "2nd degree": 0.0884, "3rd degree": 0.0442}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _placeholder(out, why: str) -> None:
    """A small image saying that the plot could not be drawn, and why."""
    try:
        plt = _pyplot()
        fig, ax = plt.subplots(figsize=(6, 1.5))
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
    _pyplot().close(fig)


def read_histogram(path) -> dict[str, list[tuple[str, str, int]]]:
    table: dict[str, list[tuple[str, str, int]]] = {}
    with open(path) as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            table.setdefault(row["column"], []).append((row["low"], row["high"], int(row["count"])))
    return table


@never_fails
def plot_histogram(histogram_tsv, metric: str, out) -> None:
    """One panel per histogram column, over every pair (not only those passing the threshold)."""
    plt = _pyplot()
    table = read_histogram(histogram_tsv)
    fig, axes = plt.subplots(1, len(table), figsize=(4.5 * len(table), 3.4), squeeze=False)
    for ax, (column, bins) in zip(axes[0], table.items(), strict=True):
        finite = [(float(lo), float(hi), c) for lo, hi, c in bins if lo not in ("-inf", "nan") and hi != "inf"]
        lows = np.array([b[0] for b in finite])
        widths = np.array([max(b[1] - b[0], 1.0) if b[0] == b[1] else b[1] - b[0] for b in finite])
        counts = np.array([b[2] for b in finite])
        ax.bar(lows, counts, width=widths, align="edge", color="#3b6ea8", edgecolor="none")
        used = np.flatnonzero(counts)
        if used.size:  # zoom on the occupied bins
            ax.set_xlim(lows[used[0]], lows[used[-1]] + widths[used[-1]])
        outside = {
            lo if lo in ("-inf", "nan") else "above": c
            for lo, hi, c in bins
            if c and (lo in ("-inf", "nan") or hi == "inf")
        }
        note = ", ".join(f"{k}: {v}" for k, v in outside.items())
        ax.set_title(f"{column}" + (f"\n(outside the axis: {note})" if note else ""), fontsize=9)
        ax.set_xlabel(column)
        ax.set_ylabel("pairs")
    fig.suptitle(f"{metric}: all pairs", fontsize=10)
    _save(fig, out)


def read_matrix(path) -> tuple[list[str], np.ndarray]:
    with open(path, encoding="utf-8") as fh:
        ids = fh.readline().rstrip("\n").split("\t")[1:]
        # IDs are verbatim text (ids.py): no comment character, no quoting
        values = np.loadtxt(
            fh, delimiter="\t", usecols=range(1, len(ids) + 1), dtype=np.float64, ndmin=2, comments=None
        )
    return ids, values


@never_fails
def plot_heatmap(matrix_tsv, metric: str, out, max_vectors: int) -> None:
    """Clustered heatmap with dendrograms (average linkage), or a note when too large."""
    plt = _pyplot()
    ids, values = read_matrix(matrix_tsv)
    if len(ids) > max_vectors or len(ids) < 2:
        fig, ax = plt.subplots(figsize=(5, 1.5))
        ax.axis("off")
        ax.text(
            0.5, 0.5, f"{len(ids)} vectors: no heatmap (report_heatmap_max = {max_vectors})", ha="center", va="center"
        )
        _save(fig, out)
        return
    import seaborn as sns

    finite = np.where(np.isfinite(values), values, np.nanmedian(np.where(np.isfinite(values), values, np.nan)))
    size = min(12.0, 4 + len(ids) * 0.08)
    labels = plain_labels(ids) if len(ids) <= 80 else False
    grid = sns.clustermap(
        finite, method="average", cmap="viridis", figsize=(size, size), xticklabels=labels, yticklabels=labels
    )
    grid.ax_heatmap.set_title(metric)
    _save(grid.figure, out)


def read_pairs(path) -> tuple[list[str], list[list[str]]]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader)
        return header, list(reader)


@never_fails
def plot_king(pairs_tsv, out) -> None:
    """Kinship against the IBS0 proportion, with the usual degree thresholds."""
    plt = _pyplot()
    header, rows = read_pairs(pairs_tsv)
    col = {name: k for k, name in enumerate(header)}
    nsnp = np.array([float(r[col["nsnp"]]) for r in rows])
    ibs0 = np.array([float(r[col["ibs0"]]) for r in rows])
    kin = np.array([float(r[col["kinship"]]) for r in rows])
    with np.errstate(divide="ignore", invalid="ignore"):
        prop = ibs0 / nsnp
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.scatter(prop, kin, s=8, alpha=0.6, color="#3b6ea8")
    for label, value in KING_DEGREES.items():
        ax.axhline(value, color="grey", lw=0.8, ls="--")
        ax.text(ax.get_xlim()[1], value, f" {label}", va="center", fontsize=7)
    ax.set_xlabel("IBS0 / NSNP")
    ax.set_ylabel("KING kinship")
    ax.set_title(f"king: {len(rows)} pairs passing the threshold", fontsize=10)
    _save(fig, out)


def clusters(pairs_tsv, ids: list[str], out) -> list[list[str]]:
    """Single-linkage clusters: connected components of the pairs passing the threshold."""
    parent = list(range(len(ids)))
    index = {name: k for k, name in enumerate(ids)}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    _, rows = read_pairs(pairs_tsv)
    for row in rows:
        a, b = find(index[row[0]]), find(index[row[1]])
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[int, list[str]] = {}
    for k, name in enumerate(ids):
        groups.setdefault(find(k), []).append(name)
    comps = sorted((g for g in groups.values() if len(g) > 1), key=lambda g: (-len(g), ids.index(g[0])))
    lines = ["cluster\tsize\tmembers"] + [f"{k}\t{len(g)}\t{','.join(g)}" for k, g in enumerate(comps, start=1)]
    write_text(out, "\n".join(lines) + "\n")
    return comps


def run_summary(summaries: list, benchmarks: list, out) -> None:
    """One row per dataset and metric: sizes, pairs, backend, rate, and time per stage."""
    from genotile.core.registry import REGISTRY

    # benchmarks/<dataset>/<stage>.<encoding>.tsv (store: ingest, plan and pack) and
    # benchmarks/<dataset>/<metric>/<stage>[_I_J].tsv (tile, matrix, merge)
    stage_seconds: dict[tuple[str, str, str], float] = {}
    for path in benchmarks:
        parts = Path(path).parts
        dataset = parts[parts.index("benchmarks") + 1]
        name = Path(path).stem
        if len(parts) - parts.index("benchmarks") == 3:
            stage, owner = name.split(".", 1)
        else:
            stage, owner = name.split("_")[0], parts[-2]
        with open(path) as fh:
            row = next(csv.DictReader(fh, delimiter="\t"))
        key = (dataset, owner, stage)
        stage_seconds[key] = stage_seconds.get(key, 0.0) + float(row["s"])
    header = [
        "dataset",
        "metric",
        "vectors",
        "fields",
        "fields_kept",
        "pairs",
        "passing",
        "threshold",
        "backend",
        "element_comparisons_per_s",
        "store_s",
        "tile_s",
        "matrix_s",
        "merge_s",
    ]
    lines = ["\t".join(header)]
    for path in summaries:
        with open(path) as fh:
            s = json.load(fh)
        dataset = s["config"].get("dataset", Path(path).parts[-3])
        rate = s["timings"]["element_comparisons_per_s_counts"]
        encoding = REGISTRY[s["metric"]].encoding
        lines.append(
            "\t".join(
                str(x)
                for x in [
                    dataset,
                    s["metric"],
                    s["n_vectors"],
                    s["n_fields"],
                    s["n_fields_kept"],
                    s.get("pairs_computed", s.get("triples_computed")),
                    s.get("pairs_passing", s.get("triples_passing")),
                    s["threshold"],
                    ",".join(s["backend"]),
                    f"{rate:.3g}" if rate else "",
                    *(
                        f"{stage_seconds.get((dataset, owner, st), 0.0):.2f}"
                        for owner, st in (
                            (encoding, "store"),
                            (s["metric"], "tile"),
                            (s["metric"], "matrix"),
                            (s["metric"], "merge"),
                        )
                    ),
                ]
            )
        )
    write_text(out, "\n".join(lines) + "\n")
