"""The run's table (run_summary.tsv): one row per dataset and metric, one per screen.

Apart from the report's plots (report.py) so that its job, which reads a few JSON and TSV files,
imports neither numpy nor matplotlib: the standard library and genotile's atomic writes only.
"""

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from genotile.util.atomic import write_text


def run_summary(
    summaries: list, benchmarks: list, out, screens: Sequence = (), encodings: dict[str, str] | None = None
) -> None:
    """One row per dataset and metric: sizes, pairs, backend, rate, and time per stage; then one
    per screen (`screen_row`).

    Parameters
    ----------
    summaries : list
        Each dataset and metric's summary.json.
    benchmarks : list
        Snakemake's benchmark files (benchmarks/...tsv): each stage's seconds.
    out : path
        run_summary.tsv, written atomically.
    screens : sequence, optional
        Each screen's summary.json.
    encodings : dict, optional
        {metric: the store it reads} (the rule's params, from core/registry.REGISTRY); without it,
        REGISTRY itself, which imports numpy.
    """
    if encodings is None:
        from genotile.core.registry import REGISTRY

        encodings = {name: facts.encoding for name, facts in REGISTRY.items()}

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
            row = next(csv.DictReader(fh, delimiter="\t"), {})
        try:
            seconds = float(row["s"])
        except (KeyError, TypeError, ValueError):  # a job beside this one (a plot), its benchmark not written yet
            continue
        key = (dataset, owner, stage)
        stage_seconds[key] = stage_seconds.get(key, 0.0) + seconds
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
        encoding = encodings[s["metric"]]
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
                    "" if s["threshold"] is None else s["threshold"],  # null: no threshold, an empty cell
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
    for path in screens:
        lines.append("\t".join(screen_row(path, stage_seconds)))
    write_text(out, "\n".join(lines) + "\n")


def screen_row(summary_json, stage_seconds: dict[tuple[str, str, str], float]) -> list[str]:
    """A screen's run_summary.tsv row (metric `screen`): samples as the vectors, signatures as
    the fields, sample x signature pairs, those with a kept match, min_score as the threshold,
    the ingest as the store stage; no fields kept, rate or matrix (empty cells)."""
    with open(summary_json, encoding="utf-8") as fh:
        s = json.load(fh)
    screen = s["config"].get("screen", Path(summary_json).parts[-3])

    def seconds(stage: str) -> str:
        return f"{stage_seconds.get((screen, 'screen', stage), 0.0):.2f}"

    return [
        screen,
        "screen",
        str(s["n_samples"]),
        str(s["n_signatures"]),
        "",
        str(s["pairs_computed"]),
        str(s["pairs_passing"]),
        "" if s["min_score"] is None else str(s["min_score"]),
        ",".join(s["backend"]),
        "",
        seconds("ingest"),
        seconds("tile"),
        "",
        seconds("merge"),
    ]
