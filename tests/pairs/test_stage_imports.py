"""Each pipeline stage, run as a job runs it (a fresh process), imports only what it needs.

A job's imports are part of its fixed cost (issue 16): the plan imports no stage code, the
ingest no tile or backend code, the tile job no ingest code, and with a CPU backend none of
them imports numba (numpy backend), CuPy, matplotlib, pandas or scipy.
"""

import subprocess
import sys

import pytest
from snakerun import write_fasta

HEAVY = ("numba", "cupy", "matplotlib", "pandas", "scipy")
STAGE_CODE = ("genotile.store.ingest", "genotile.pairs.tile", "genotile.pairs.merge", "genotile.backends")

SCRIPT = """
import sys
from genotile.pairs import stage as pairs_stage
from genotile.store import stage as store_stage

stage, o = sys.argv[1], sys.argv[2]
if stage == "ingest":
    store_stage.ingest(f"{o}/aln.fa", "nucleotide", f"{o}/codes.npy", f"{o}/ingest.json")
elif stage == "plan":
    store_stage.plan(f"{o}/ingest.json", "auto", 1, f"{o}/plan.json", f"{o}/perm.npy", metrics=["snp"], backend="numpy")
elif stage == "pack":
    store_stage.pack(f"{o}/codes.npy", f"{o}/ingest.json", f"{o}/plan.json", f"{o}/perm.npy", f"{o}/planes.npy",
               f"{o}/manifest.json")
elif stage == "tile":
    pairs_stage.tile(f"{o}/planes.npy", f"{o}/manifest.json", f"{o}/perm.npy", "snp", 0, 0, threshold=None, dense=True,
               backend="numpy", tile_out=f"{o}/tile_0_0.npz")
print(" ".join(m for m in sys.argv[3:] if m in sys.modules))
"""  # fmt: skip

# stage -> the stage code it must not import
NOT_IMPORTED = {
    "ingest": ("genotile.pairs.tile", "genotile.pairs.merge", "genotile.backends"),
    "plan": STAGE_CODE,
    "pack": ("genotile.store.ingest", "genotile.pairs.tile", "genotile.pairs.merge"),
    "tile": ("genotile.store.ingest", "genotile.pairs.merge"),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("stages")
    write_fasta(d / "aln.fa", ["ACGTACGTAA", "ACGAACGTAC", "ACGTTCGTAA", "NCGTACG-AA"])
    return d


@pytest.mark.parametrize("stage", list(NOT_IMPORTED))  # in order: each reads the one before
def test_stage_imports_only_its_own_code(workdir, stage):
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, stage, str(workdir), *HEAVY, *STAGE_CODE],
        capture_output=True,
        text=True,
        check=True,
    )
    imported = set(proc.stdout.split())
    assert not imported & set(HEAVY), (stage, imported)
    assert not imported & set(NOT_IMPORTED[stage]), (stage, imported)
    if stage == "tile":
        assert (workdir / "tile_0_0.npz").exists() and "genotile.pairs.tile" in imported
