"""A ccc3 job's passing triples into its file in bounded memory, as sorted runs.

However many triples pass (a null threshold keeps them all), a job holds at most RUN_ROWS of
them: the chunks of triples/tile.iter_triples gather in memory, and a full gathering is sorted
by (a, b, c) and appended, one raw file per column, to a folder beside the job file
(`<job file>.runs/`, removed at the end). A job whose triples fit one run writes the file it
always wrote (tilefile.write_tile of the sorted columns); a larger one copies its columns from
the raw files into the job file (tilefile.write_tile_columns) with one more array, `runs`
(int64 (r,): each run's length), and the merge reads each run as sorted.
Memory: RUN_ROWS x ROW_BYTES gathered, about as much again while sorting (~0.4 GB).
"""

import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from genotile.core import ccc3
from genotile.io.tilefile import Column, write_tile, write_tile_columns
from genotile.triples.tile import columns, sort_triples

RUN_ROWS = 1 << 20  # triples sorted in memory at once (92 MB of columns, ~4x that at the sort)
NAMES = ("a", "b", "c", *ccc3.COLUMNS)


def write_job(
    out, chunks: Iterable[tuple[np.ndarray, np.ndarray]], make_meta: Callable[[], dict], run_rows: int | None = None
) -> dict:
    """Sorts the chunks' triples into the job file `out`; returns how many there were.

    Parameters
    ----------
    out : str or os.PathLike
        The job file (written atomically, as write_tile does).
    chunks : iterable of (ids int64 (t, 3), values float64 (t, 8))
        triples/tile.iter_triples' chunks.
    make_meta : callable
        The file's meta, asked for once the chunks are spent (their seconds); `triples_passing`
        and, with several runs, `runs` are added here.
    run_rows : int, optional
        Triples per run (default RUN_ROWS).

    Returns
    -------
    dict
        The meta written.
    """
    run_rows = RUN_ROWS if run_rows is None else run_rows
    spill = Path(f"{out}.runs")
    ids_parts: list[np.ndarray] = []
    value_parts: list[np.ndarray] = []
    held, runs = 0, list[int]()
    try:
        for ids, values in chunks:
            ids_parts.append(ids)
            value_parts.append(values)
            held += ids.shape[0]
            if held >= run_rows:
                runs.append(_spill(spill, ids_parts, value_parts, first=not runs))
                ids_parts, value_parts, held = [], [], 0
        if not runs:  # one run: the file as it always was
            ids, values = _gathered(ids_parts, value_parts)
            meta = {**make_meta(), "triples_passing": int(ids.shape[0])}
            write_tile(out, columns(ids, values), meta)
            return meta
        if held:
            runs.append(_spill(spill, ids_parts, value_parts, first=False))
        del ids_parts, value_parts
        total = int(sum(runs))
        meta = {**make_meta(), "triples_passing": total, "runs": len(runs)}
        cols = {
            name: Column(str(spill / f"{name}.bin"), 0, np.dtype(np.int64 if k < 3 else np.float64), total)
            for k, name in enumerate(NAMES)
        }
        write_tile_columns(out, {"runs": np.array(runs, np.int64)}, cols, meta)
        return meta
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def _gathered(ids_parts, value_parts) -> tuple[np.ndarray, np.ndarray]:
    ids = np.concatenate(ids_parts) if ids_parts else np.zeros((0, 3), np.int64)
    values = np.concatenate(value_parts) if value_parts else np.zeros((0, 8), np.float64)
    return sort_triples(ids, values)


def _spill(folder: Path, ids_parts, value_parts, *, first: bool) -> int:
    """Sorts the gathered triples and appends them to the column files; returns their number."""
    ids, values = _gathered(ids_parts, value_parts)
    ids_parts.clear()
    value_parts.clear()
    if first:
        shutil.rmtree(folder, ignore_errors=True)  # a killed job's leftovers
        folder.mkdir(parents=True)
    for name, column in columns(ids, values).items():
        with open(folder / f"{name}.bin", "ab") as fh:
            column.tofile(fh)
    return int(ids.shape[0])
