"""Progress: plain lines in a log, a bar on a terminal."""

import io
import logging

import pytest

from genotile.util import progress as progress_mod
from genotile.util.progress import Progress


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture()
def logger():
    log = logging.getLogger("genotile")
    saved, level = log.handlers[:], log.level
    log.handlers.clear()
    log.setLevel(logging.INFO)
    yield log
    log.handlers[:] = saved
    log.setLevel(level)


def test_plain_lines_in_a_log_file(logger, tmp_path, monkeypatch):
    handler = logging.FileHandler(tmp_path / "x.log")
    logger.addHandler(handler)
    clock = iter([0.0, 0.5, 6.0, 7.0, 12.5, 13.0])  # start, then one reading per call
    monkeypatch.setattr(progress_mod.time, "monotonic", lambda: next(clock))
    p = Progress("pack", total=10)
    for done in (1, 2, 3, 4):
        p.update(done)
    p.finish(10)
    handler.close()
    lines = (tmp_path / "x.log").read_text().splitlines()
    assert lines == ["pack: 2/10 (6 s)", "pack: 4/10 (12 s)", "pack: 10 done in 13.00 s"]


def test_bar_on_a_terminal(logger, monkeypatch):
    tty = FakeTTY()
    logger.addHandler(logging.StreamHandler(tty))
    monkeypatch.setattr(progress_mod.sys, "stderr", tty)
    clock = iter([0.0, 1.0, 2.0])
    monkeypatch.setattr(progress_mod.time, "monotonic", lambda: next(clock))
    p = Progress("tiles", total=4)
    p.update(2)
    p.finish(4)
    out = tty.getvalue()
    assert "\rtiles [###############---------------] 2/4 (1 s)" in out
    assert out.rstrip().endswith("tiles: 4 done in 2.00 s")
