"""Results of an earlier configuration that the current one no longer writes, removed by the merge.

A merge owns its metric's folder: after a change of `dense_max`, block size or stages, a
`matrix.tsv` (and the report's heatmap drawn from it) or tile files of the old plan would sit
beside the new results looking current. The merge deletes them, so every result file in the
folder is one this configuration produced (and `summary.json` lists the outputs it wrote).
"""

import logging
import re
from pathlib import Path

from genotile.util import atomic

log = logging.getLogger("genotile")


def _unlink(path: Path) -> None:
    # (in `genotile run`, a metric's folder's files go as its new results land: atomic.renamed_together)
    if atomic.remove(path):
        log.info("removed %s: the current configuration no longer writes it", path)


def remove_stale_files(folder, pattern: str, current) -> None:
    """Delete files of `folder` whose names fully match `pattern` and are not in `current`."""
    folder = Path(folder)
    keep = {Path(p).resolve() for p in current}
    regex = re.compile(pattern)
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if regex.fullmatch(path.name) and path.resolve() not in keep:
            _unlink(path)


def remove_stale_matrix(metric_dir) -> None:
    """Delete `matrix.tsv` and the report's heatmap of a metric that writes no matrix now."""
    metric_dir = Path(metric_dir)
    for path in (metric_dir / "matrix.tsv", metric_dir / "report" / "heatmap.png"):
        _unlink(path)
