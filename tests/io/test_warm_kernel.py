"""The store job warms numba's kernels on a thread (io/readers/streamed.py `warm_kernel`) only for
a pass that takes them: a whole .bed's pass into a GPU's transposer (store/resident.py
`on_device`, bed.stream_to) takes none, a .pgen's or a selection's there only the kernel that
makes its records (counts_to_records); on the CPU both."""

import numpy as np
import pytest
from genodata import random_genotypes
from test_bed import write_fileset

from genotile.io.readers import bed, plink, streamed
from genotile.io.readers.bed import BedReader
from genotile.store import resident
from genotile.store.ingest_genotypes import read_genotypes


@pytest.mark.parametrize("on_device", [False, True])
@pytest.mark.parametrize("selection", [False, True])
def test_the_pass_warms_only_the_kernels_it_takes(tmp_path, monkeypatch, on_device, selection):
    path = write_fileset(tmp_path / "x", random_genotypes(11, 120, seed=2))
    (tmp_path / "keep.txt").write_text("s7\ns2\ns9\n")
    warmed: list[bool] = []

    def warm(path, size=None, transposer=True):
        warmed.append(transposer)

    monkeypatch.setattr(bed, "warm_kernel", warm)
    monkeypatch.setattr(plink, "warm_kernel", warm)
    options = {"samples": tmp_path / "keep.txt"} if selection else {}
    with BedReader(path, **options) as reader, resident.on_device(on_device):
        _, held = read_genotypes(reader, path, "genotype", tmp_path / "codes.npy", hold=True)
    assert isinstance(held, streamed.BedFile) and (held.pgen is not None) == selection
    # a selection's records are made by counts_to_records, on the GPU too; a whole .bed there needs none
    assert warmed == ([not on_device] if selection else [] if on_device else [True])
    assert not (tmp_path / "codes.npy").exists()  # read later, by the store's pass


@pytest.mark.parametrize("transposer", [False, True])
def test_warm_kernel_loads_what_it_is_asked(tmp_path, monkeypatch, transposer):
    """With `transposer` False only counts_to_records is called (the thread's work, run here)."""
    from genotile.io.readers import bed_kernels

    called: list[str] = []
    for name in ("records_to_bits", "counts_to_records"):
        monkeypatch.setattr(bed_kernels, name, lambda *a, name=name: called.append(name))
    monkeypatch.setattr(streamed, "_warming", None)
    monkeypatch.setattr(streamed, "COMPILED_BYTES", 0)
    (tmp_path / "x.bed").write_bytes(np.zeros(8, np.uint8).tobytes())
    streamed.warm_kernel(tmp_path / "x.bed", transposer=transposer)
    assert streamed._warming is not None
    streamed._warming.join()
    assert called == (["records_to_bits"] if transposer else []) + ["counts_to_records"]
