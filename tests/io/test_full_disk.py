"""A full disk, an exceeded quota or a read-only file system while writing (issue 15): one line
naming the file that could not be written, no traceback, no temporary file left behind."""

import errno
import os
from types import SimpleNamespace

import numpy as np
import pytest
from snakerun import random_alignment, write_fasta

from genotile.cli import main
from genotile.errors import GenotileError
from genotile.io.tilefile import write_tile
from genotile.runtime.rule import run_rule
from genotile.util.atomic import write_text


def refuse(code):
    def write(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    return write


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EROFS])
def test_atomic_write_names_the_file(tmp_path, monkeypatch, code):
    monkeypatch.setattr(np, "savez", refuse(code))
    out = tmp_path / "pairs" / "tile_0_0.npz"
    with pytest.raises(GenotileError, match=rf"^{out}: could not be written: {os.strerror(code)}$"):
        write_tile(out, {"a": np.zeros(3)}, {})
    assert list((tmp_path / "pairs").iterdir()) == []  # the temporary file is gone


def test_folder_that_cannot_be_made_is_named(tmp_path, monkeypatch):
    from pathlib import Path

    monkeypatch.setattr(Path, "mkdir", refuse(errno.EROFS))
    with pytest.raises(GenotileError, match=r"summary.json: could not be written: Read-only file system"):
        write_text(tmp_path / "x" / "summary.json", "{}")


def test_genotile_run_ends_in_one_line(tmp_path, monkeypatch, capsys):
    path = tmp_path / "in.fa"
    write_fasta(path, random_alignment(np.random.default_rng(5), 6, 40))
    monkeypatch.setattr(np, "savez", refuse(errno.ENOSPC))  # the first tile file
    assert main(["run", str(path), "--outdir", str(tmp_path / "out"), "--metric", "snp"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"genotile error: {tmp_path / 'out/snp/pairs/tile_0_0.npz'}: could not be written: " + (
        "No space left on device"
    )
    assert not any("Traceback" in line for line in err)


def test_rule_job_ends_in_one_line_for_a_write_outside_atomic_path(tmp_path, capsys):
    sm = SimpleNamespace(log=[str(tmp_path / "rule.log")], rule="merge")

    def step(_sm):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "big.npy"))

    with pytest.raises(SystemExit) as exc:
        run_rule(sm, step)
    assert exc.value.code == 1
    line = f"genotile error: {tmp_path / 'big.npy'}: could not be written: No space left on device"
    assert capsys.readouterr().err.strip() == line
    assert "could not be written" in (tmp_path / "rule.log").read_text()
