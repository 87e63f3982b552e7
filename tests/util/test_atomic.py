"""util/atomic: a killed writer's temporary file is removed, a live writer's is not."""

import multiprocessing as mp

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
