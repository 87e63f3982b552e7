"""util/atomic: a killed writer's temporary file is removed, a live writer's is not; renames held
back in a block land together at its end, or not at all."""

import multiprocessing as mp
import os
from pathlib import Path

from genotile.util.atomic import atomic_path, write_text


def _write_after(path, started, go):
    with atomic_path(path) as tmp:
        tmp.write_text("first", encoding="utf-8")
        started.set()
        go.wait(30)


def test_a_live_writers_temporary_file_is_kept(tmp_path):
    out = tmp_path / "d.json"
    ctx = mp.get_context("fork")
    started, go = ctx.Event(), ctx.Event()
    writer = ctx.Process(target=_write_after, args=(out, started, go))
    writer.start()
    try:
        assert started.wait(30)
        write_text(out, "second")  # another process writes the same file meanwhile
        assert len(list(tmp_path.glob(".d.json.*.tmp"))) == 1  # the live writer's, kept
    finally:
        go.set()
        writer.join(30)
    assert writer.exitcode == 0  # its rename found its temporary file
    assert out.read_text() == "first"
    assert list(tmp_path.glob("*.tmp")) == []


def test_a_killed_writers_temporary_file_is_removed(tmp_path):
    out = tmp_path / "d.json"
    left = tmp_path / ".d.json.abc123.tmp"  # no process holds it
    left.write_text("half")
    write_text(out, "whole")
    assert out.read_text() == "whole"
    assert not left.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json"]


def test_renames_held_back_land_together_in_order_the_last_named_last(tmp_path, monkeypatch):
    from genotile.util import atomic

    folder, other = tmp_path / "m", tmp_path / "m" / "pairs"
    for name in ("a.tsv", "summary.json", "b.tsv", "stale.tsv"):
        write_text(folder / name, f"old {name}")
    renamed: list[str] = []
    replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (renamed.append(Path(dst).name), replace(src, dst))[1])
    with atomic.renamed_together(folder, last="summary.json"):
        write_text(folder / "a.tsv", "new a.tsv")
        write_text(folder / "summary.json", "new summary.json")
        assert atomic.remove(folder / "stale.tsv")
        assert not atomic.remove(folder / "never.tsv")
        write_text(tmp_path / "m" / ".." / "m" / "b.tsv", "new b.tsv")  # the folder by another path
        write_text(other / "t.npz", "new t.npz")  # another folder's: renamed at once
        assert renamed == ["t.npz"]
        for name in ("a.tsv", "summary.json", "b.tsv", "stale.tsv"):  # nothing new under a final name yet
            assert (folder / name).read_text() == f"old {name}"
            assert atomic.written(folder / name).read_text() == ("old " if name == "stale.tsv" else "new ") + name
        assert atomic.written(other / "t.npz") == other / "t.npz"
    assert renamed == ["t.npz", "a.tsv", "b.tsv", "summary.json"]
    assert sorted(p.name for p in folder.iterdir()) == ["a.tsv", "b.tsv", "pairs", "summary.json"]  # no .tmp
    for name in ("a.tsv", "summary.json", "b.tsv"):
        assert (folder / name).read_text() == f"new {name}"


def test_an_error_in_the_block_leaves_the_folder_as_it_was(tmp_path):
    from genotile.util import atomic

    for name in ("a.tsv", "stale.tsv"):
        write_text(tmp_path / name, f"old {name}")
    try:
        with atomic.renamed_together(tmp_path, last="summary.json"):
            write_text(tmp_path / "a.tsv", "new")
            write_text(tmp_path / "summary.json", "new")
            atomic.remove(tmp_path / "stale.tsv")
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tsv", "stale.tsv"]  # no .tmp, no summary
    assert (tmp_path / "a.tsv").read_text() == "old a.tsv"
    write_text(tmp_path / "a.tsv", "after")  # the block is over: renamed at once
    assert (tmp_path / "a.tsv").read_text() == "after"


def test_an_interrupt_between_the_final_renames_leaves_no_temporary(tmp_path, monkeypatch):
    """A KeyboardInterrupt between two of the block's renames: the files renamed stay, the rest's
    temporaries are removed and their locks let go (before, only an OSError was cleaned up)."""
    from genotile.util import atomic

    replace, calls = os.replace, []

    def interrupted(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt
        replace(src, dst)

    monkeypatch.setattr(os, "replace", interrupted)
    try:
        with atomic.renamed_together(tmp_path, last="summary.json"):
            for name in ("a.tsv", "b.tsv", "summary.json"):
                write_text(tmp_path / name, f"new {name}")
    except KeyboardInterrupt:
        pass
    monkeypatch.setattr(os, "replace", replace)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tsv"]  # no .tmp left
    write_text(tmp_path / "b.tsv", "after")  # its lock let go: written at once
    assert (tmp_path / "b.tsv").read_text() == "after"
