"""store/resident.py without a GPU: a held store's file and manifests written behind the job's
tiles (`write_behind`, `manifests_behind`), what a tile reads meanwhile (`manifest_of`), the
manifest as written (`final_manifest`), and errors raised where the job waits (`settle`). The
rows a GPU holds are stood in for by a numpy array: only `lookup` asks CuPy for the device."""

import json
import threading

import numpy as np
import pytest

from genotile.store import resident
from genotile.store.manifest import STORE_KEYS


@pytest.fixture(autouse=True)
def nothing_held():
    yield
    resident.release()


def held(tmp_path):
    return resident.hold(tmp_path / "planes.npy", np.arange(6, dtype=np.uint64).reshape(3, 2), 0, 64)


def test_the_file_is_written_behind_and_whole_once_settled(tmp_path):
    go = threading.Event()

    def write(tmp):
        go.wait(5)
        with open(tmp, "wb") as fh:
            np.save(fh, np.arange(3))

    resident.write_behind(tmp_path / "planes.npy", held(tmp_path), write)
    assert not (tmp_path / "planes.npy").exists()  # not before it is whole
    go.set()
    resident.settle()
    assert np.load(tmp_path / "planes.npy").tolist() == [0, 1, 2] and not list(tmp_path.glob(".*tmp"))


def test_a_writers_error_is_raised_where_the_job_waits_and_nothing_is_left(tmp_path):
    def write(tmp):
        tmp.write_bytes(b"half")
        raise OSError("disk on fire")

    resident.write_behind(tmp_path / "planes.npy", held(tmp_path), write)
    with pytest.raises(OSError, match="disk on fire"):
        resident.settle()
    assert list(tmp_path.iterdir()) == []  # the temporary file removed, no planes.npy


def test_tiles_read_the_provisional_manifest_until_the_written_one_is_in(tmp_path):
    manifest_path = tmp_path / "manifest.json"
    provisional = {key: None for key in STORE_KEYS} | {"n_vectors": 3, "plan": {"blocks": (0, 3)}}
    final = provisional | {"input_sha256": "ab" * 32, "plan": {"blocks": [0, 3]}}
    go = threading.Event()

    def write():
        go.wait(5)
        manifest_path.write_text(json.dumps(final))

    held(tmp_path)
    resident.manifests_behind(tmp_path / "planes.npy", manifest_path, provisional, write)
    assert resident.writing_manifests()
    seen = resident.manifest_of(manifest_path)
    assert seen == json.loads(json.dumps(provisional)) and seen["plan"]["blocks"] == [0, 3]  # as a file reads
    assert resident.manifest_of(tmp_path / "other.json") is None and resident.final_manifest(tmp_path / "x") is None
    go.set()
    assert resident.final_manifest(manifest_path) == final  # waited for, read once
    assert resident.final_manifest(manifest_path) is resident.final_manifest(manifest_path)
    assert resident.manifest_of(manifest_path) is None and not resident.writing_manifests()  # the file now


def test_a_manifest_writers_error_is_raised_by_settle(tmp_path):
    held(tmp_path)

    def write():
        raise ValueError("no checksum")

    resident.manifests_behind(tmp_path / "planes.npy", tmp_path / "manifest.json", {"n_vectors": 3}, write)
    with pytest.raises(ValueError, match="no checksum"):
        resident.settle_manifests()


def test_on_device_is_asked_for_within_it_only_and_lets_go_on_leaving(tmp_path):
    assert not resident.wanted()
    with resident.on_device():
        assert resident.wanted()
        with resident.on_device(False):
            assert not resident.wanted()
        held(tmp_path)
    assert not resident.wanted() and resident.lookup(tmp_path / "planes.npy") is None
    assert not resident.spread(tmp_path / "planes.npy", 2)  # nothing held: nothing to copy
