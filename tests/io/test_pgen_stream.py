"""The store job's pass over a .pgen (io/readers/bed.py with BedFile.pgen: pgenlib's counts made
into .bed records, then the .bed's own transposer): no codes file, the same store as the codes
path, and, for a .pgen made by `plink2 --make-pgen` from a .bed, the .bed's own store bytes.

A .bed's selection of variants (regions; the autosomes of a .bim with other contigs) takes the
same pass, and so does a `samples:` list (pgenlib's subset, its samples put in the list's order
as the records are made) and a split multi-allelic variant (a record an ALT).
"""

import json
import shutil
import subprocess

import numpy as np
import pytest
from genodata import random_genotypes
from test_bed import (
    as_read,
    no_numpy_bed,
    npy_bytes,
    reference_bits,
    reference_counts,
    spy,
    store_job,
    tiny_pass,
    write_fileset,
)

from genotile.core.encode import MISSING
from genotile.errors import GenotileError
from genotile.io.readers import bed, bed_words
from genotile.io.readers.bed import BedReader
from genotile.io.readers.plink import PlinkReader


def make_pgen(bed_path, out) -> str:
    """`plink2 --bfile x --make-pgen` of a .bed (what a PLINK 2 user's .pgen is made by)."""
    if shutil.which("plink2") is None:
        pytest.skip("plink2 is not installed (Debian: apt-get install -y plink2)")
    prefix = str(bed_path)[: -len(".bed")]
    subprocess.run(
        ["plink2", "--bfile", prefix, "--make-pgen", "--out", str(out), "--threads", "1"],
        check=True,
        capture_output=True,
    )
    return f"{out}.pgen"


def codes_path(monkeypatch) -> None:
    """Neither the .bed's pass nor the .pgen's: every fileset read by pgenlib into codes, then packed."""
    no_numpy_bed(monkeypatch)


@pytest.mark.parametrize(
    "n, m, p_missing",
    [(1, 1, 0.0), (5, 130, 0.1), (13, 200, 0.05), (26, 129, 1.0), (70, 700, 0.05), (203, 1000, 0.02)],
)
@pytest.mark.parametrize("collapse", [False, True])
@pytest.mark.parametrize("bound", ["tiny", "default"])
@pytest.mark.parametrize("compiled", [True, False])
def test_a_pgen_is_stored_in_one_pass_as_its_bed_is(tmp_path, monkeypatch, n, m, p_missing, collapse, bound, compiled):
    g = random_genotypes(n, m, p_missing=p_missing, seed=n + 5 * m)
    if n >= 3:
        g[n - 1] = g[0]  # a duplicate sample
    if m >= 70:
        g[:, 66], g[:, 67], g[:, 68] = MISSING, 1, 0  # all missing; monomorphic
    bed_path = write_fileset(tmp_path / "x", g, seed=n)
    pgen = make_pgen(bed_path, tmp_path / "p")
    with monkeypatch.context() as patch:
        patch.setattr(bed, "COMPILED_BYTES", 0 if compiled else 1 << 40)  # numba's kernels, or numpy's
        if bound == "tiny":  # a row held at a time, a record a task
            tiny_pass(patch)
            patch.setattr(bed, "PGEN_READ_BYTES", 1)
        called = spy(patch, ["write_streamed", "read_held", "write_bits", "write_sample_rows", "pack_planes"])
        streamed = store_job(pgen, tmp_path / "streamed", collapse)
        bed_store = store_job(bed_path, tmp_path / "bed", collapse)
    assert called == (["read_held", "write_bits"] if collapse else ["write_streamed"]) * 2  # no codes
    with monkeypatch.context() as patch:
        codes_path(patch)
        slow = store_job(pgen, tmp_path / "codes", collapse)
    assert list(streamed) == list(slow) and not list((tmp_path / "streamed" / "store").glob(".*"))
    for name in ("ingest.json", "store/perm.npy", "store/plan.json"):
        assert streamed[name] == slow[name], name
    assert as_read(tmp_path / "streamed") == as_read(tmp_path / "codes")
    # the .bed's store, byte for byte: the bits as the brute-force reference makes them
    assert streamed["store/planes.npy"] == bed_store["store/planes.npy"]
    assert streamed["store/perm.npy"] == bed_store["store/perm.npy"]
    manifest = json.loads(streamed["store/manifest.json"])
    rows_of = np.load(tmp_path / "streamed" / "store" / "perm.npy")
    if "distinct_index" in manifest:
        _, first = np.unique(manifest["distinct_index"], return_index=True)
        rows_of = first[rows_of]
    assert streamed["store/planes.npy"] == npy_bytes(reference_bits(g)[rows_of].reshape(len(rows_of), -1))
    counts = json.loads(streamed["ingest.json"])["counts"]
    assert {k: counts[k] for k in ("missing_calls", "monomorphic", "all_missing")} == reference_counts(g)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("compiled", [True, False])
def test_records_made_of_counts_are_the_beds_records(tmp_path, monkeypatch, threads, compiled):
    """write_streamed over a .pgen's records writes what it writes over the .bed the .pgen was made from."""
    monkeypatch.setattr(bed, "COMPILED_BYTES", 0 if compiled else 1 << 40)
    n, m = 2100, 130  # samples past one strip of the compiled transposer
    g = random_genotypes(n, m, p_missing=0.1, seed=threads)
    bed_path = write_fileset(tmp_path / "x", g, padding="random")
    pgen = PlinkReader(make_pgen(bed_path, tmp_path / "p")).held_bits()
    assert pgen is not None and pgen.pgen is not None
    rows_of = np.random.default_rng(n).permutation(n)
    for rows in (rows_of, rows_of[: n // 2]):
        want = bed.write_streamed(bed_path, n, m, rows, tmp_path / "b.npy", threads=threads)
        got = bed.write_streamed(pgen.path, n, m, rows, tmp_path / "p.npy", threads=threads, pgen=pgen.pgen)
        assert got == want == {"variants": m, **reference_counts(g)}
        assert (tmp_path / "p.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()


@pytest.mark.parametrize("n", [1, 3, 4, 5, 33])
@pytest.mark.parametrize("gather", [False, True])
def test_counts_to_records_kernels_agree(n, gather):
    from genotile.io.readers.bed_kernels import counts_to_records

    rng = np.random.default_rng(n)
    counts = rng.choice(np.array([0, 1, 2, -9], dtype=np.int8), size=(7, n)).view(np.uint8)
    columns = rng.permutation(n).astype(np.int64) if gather else np.zeros(0, dtype=np.int64)
    width = bed_words.record_bytes(n)
    span = width + 3
    numba_out = np.full(7 * span, 0xAA, dtype=np.uint8)
    numpy_out = numba_out.copy()
    counts_to_records(counts, 7, numba_out, span, columns)
    bed_words.counts_to_records(counts, 7, numpy_out, span, columns)
    assert np.array_equal(numba_out, numpy_out)
    # brute force: sample j (column columns[j]) at bits 2 (j % 4) of byte j // 4, padding fields 0
    field = {0: 3, 1: 2, 2: 0, 247: 1}
    for r in range(7):
        want = [0] * width
        for j in range(n):
            want[j // 4] |= field[int(counts[r, columns[j] if gather else j])] << (2 * (j % 4))
        assert numpy_out[r * span : r * span + width].tolist() == want
        assert numpy_out[r * span + width : (r + 1) * span].tolist() == [0xAA] * 3  # the rest untouched


@pytest.mark.parametrize("order", ["file", "shuffled"])
@pytest.mark.parametrize("collapse", [False, True])
@pytest.mark.parametrize("bound", ["tiny", "default"])
@pytest.mark.parametrize("compiled", [True, False])
def test_a_samples_list_is_read_as_pgenlibs_subset_in_the_lists_order(
    tmp_path, monkeypatch, order, collapse, bound, compiled
):
    n, m = 90, 300
    g = random_genotypes(n, m, p_missing=0.05, seed=11)
    g[40] = g[3]  # a duplicate sample among those picked
    path = write_fileset(tmp_path / "x", g)
    others = np.setdiff1d(np.arange(n), [3, 40])
    picked = np.random.default_rng(4).permutation(np.concatenate([[3, 40], others[:48]]))
    picked = np.sort(picked) if order == "file" else picked
    (tmp_path / "keep.txt").write_text("".join(f"s{i}\n" for i in picked))
    keep = tmp_path / "keep.txt"
    for given in (path, make_pgen(path, tmp_path / "p")):
        held = PlinkReader(given, samples=keep).held_bits() if given.endswith(".pgen") else None
        if held is not None:
            assert held.n_samples == 50 and (held.pgen.columns.size > 0) == (order == "shuffled")
        out = tmp_path / f"{order}-{given[-4:]}"
        with monkeypatch.context() as patch:
            patch.setattr(bed, "COMPILED_BYTES", 0 if compiled else 1 << 40)
            if bound == "tiny":
                tiny_pass(patch)
                patch.setattr(bed, "PGEN_READ_BYTES", 1)
            called = spy(patch, ["write_streamed", "read_held", "write_sample_rows", "pack_planes"])
            streamed = store_job(given, out / "streamed", collapse, samples=str(keep))
        assert called == (["read_held"] if collapse else ["write_streamed"])  # no codes
        with monkeypatch.context() as patch:
            codes_path(patch)
            store_job(given, out / "codes", collapse, samples=str(keep))
        assert as_read(out / "streamed") == as_read(out / "codes")
        ingested = json.loads(streamed["ingest.json"])
        assert ingested["ids"] == [f"s{i}" for i in picked]
        counts = ingested["counts"]
        assert {k: counts[k] for k in ("missing_calls", "monomorphic", "all_missing")} == reference_counts(g[picked])
        manifest = json.loads(streamed["store/manifest.json"])
        rows_of = np.load(out / "streamed" / "store" / "perm.npy")
        if "distinct_index" in manifest:
            _, first = np.unique(manifest["distinct_index"], return_index=True)
            rows_of = first[rows_of]
        assert streamed["store/planes.npy"] == npy_bytes(reference_bits(g[picked])[rows_of].reshape(len(rows_of), -1))


def test_a_beds_selection_takes_the_pass_and_what_does_not(tmp_path, monkeypatch):
    g = random_genotypes(11, 120, seed=2)
    path = write_fileset(tmp_path / "x", g)
    (tmp_path / "keep.txt").write_text("s7\ns2\ns9\n")
    chosen = BedReader(path, regions="1:1-10").held_bits()  # variants 0-9 of contig 1
    assert chosen is not None and chosen.pgen is not None and chosen.pgen.variants.tolist() == list(range(10))
    called = spy(monkeypatch, ["write_streamed", "write_sample_rows"])
    streamed = store_job(path, tmp_path / "regions", regions="1:1-10,2:60-80")
    assert called == ["write_streamed"]
    monkeypatch.undo()
    with monkeypatch.context() as patch:
        codes_path(patch)
        store_job(path, tmp_path / "codes", regions="1:1-10,2:60-80")
    assert as_read(tmp_path / "regions") == as_read(tmp_path / "codes")
    assert json.loads(streamed["ingest.json"])["n_fields"] == 31


def test_a_split_multiallelic_pgen_is_a_record_an_alt(tmp_path, monkeypatch):
    """multiallelic: split reads allele 2 of a variant too: a record each ALT, the store the
    codes path's (and skip leaves the multi-allelic variant out)."""
    if shutil.which("plink2") is None:
        pytest.skip("plink2 is not installed (Debian: apt-get install -y plink2)")
    from genodata import write_vcf

    text = (
        "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n"
        '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
        "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ta\tb\tc\n"
        "1\t10\tv1\tA\tC\t.\tPASS\t.\tGT\t0/1\t1/1\t0/0\n"
        "1\t20\tv2\tA\tC,G\t.\tPASS\t.\tGT\t0/2\t1/2\t0/0\n"
    )
    vcf = write_vcf(tmp_path / "m.vcf", text)
    subprocess.run(
        ["plink2", "--vcf", str(vcf), "--make-pgen", "--out", str(tmp_path / "m"), "--threads", "1"],
        check=True,
        capture_output=True,
    )
    split = PlinkReader(tmp_path / "m.pgen", multiallelic="split").held_bits()
    assert split is not None and split.pgen is not None
    assert split.pgen.variants.tolist() == [0, 1, 1] and split.pgen.alleles.tolist() == [1, 1, 2]
    skipped = PlinkReader(tmp_path / "m.pgen").held_bits()
    assert skipped is not None and skipped.pgen is not None and skipped.pgen.variants.tolist() == [0]
    assert skipped.pgen.alleles is None
    pgen = str(tmp_path / "m.pgen")
    for options in ({"multiallelic": "split"}, {}):
        for compiled in (True, False):
            monkeypatch.setattr(bed, "COMPILED_BYTES", 0 if compiled else 1 << 40)
            out = tmp_path / f"{options.get('multiallelic', 'skip')}-{compiled}"
            called = spy(monkeypatch, ["write_streamed", "write_sample_rows"])
            streamed = store_job(pgen, out / "streamed", **options)
            assert called == ["write_streamed"]
            monkeypatch.undo()
            with monkeypatch.context() as patch:
                codes_path(patch)
                store_job(pgen, out / "codes", **options)
            assert as_read(out / "streamed") == as_read(out / "codes")
            assert json.loads(streamed["ingest.json"])["n_fields"] == (3 if options else 1)


def test_a_pgen_cut_after_ingest_stops_the_pass_with_one_line(tmp_path):
    g = random_genotypes(40, 300, seed=2)
    pgen = make_pgen(write_fileset(tmp_path / "x", g), tmp_path / "p")
    held = PlinkReader(pgen).held_bits()
    assert held is not None
    with open(pgen, "r+b") as fh:  # cut after it was checked: the pass's readers meet it
        fh.truncate(100)
    with pytest.raises(GenotileError, match=rf"^{pgen}: "):
        bed.write_streamed(pgen, 40, 300, np.arange(40), tmp_path / "s.npy", pgen=held.pgen)


@pytest.mark.parametrize("damage", ["cut", "garbage"])
def test_a_damaged_pgen_stops_the_pass_with_one_line_however_many_tasks_are_queued(tmp_path, monkeypatch, damage):
    """A record pgenlib cannot read stops the pass; the tasks still queued on the other threads
    must not read with a reader closed under them (that crashed the process: pgenlib's readers
    are closed once the pool is shut down)."""
    monkeypatch.setattr(bed, "PGEN_READ_BYTES", 1)  # a record a task: many queued
    pgen = make_pgen(write_fileset(tmp_path / "x", random_genotypes(2000, 1200, seed=1)), tmp_path / "p")
    data = bytearray(open(pgen, "rb").read())
    if damage == "cut":
        data = data[: len(data) * 2 // 3]
    else:
        half = len(data) // 2
        data[half:] = np.random.default_rng(0).integers(0, 256, len(data) - half, np.uint8).tobytes()
    with open(pgen, "wb") as fh:
        fh.write(bytes(data))
    with pytest.raises(GenotileError, match=rf"^{pgen}: "):
        store_job(pgen, tmp_path / "out")
