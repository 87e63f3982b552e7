"""The numpy reader of a plain .bed (io/readers/bed.py) against pgenlib's reading of the same fileset.

Random filesets are written byte by byte here (any padding bits, missing calls, sample
counts that are not a multiple of 4), then ingested and packed twice: by the numpy reader and
by pgenlib (BedReader.plain off). Codes, planes and both manifests must be the same bytes.
The store job's path without codes (one pass over the .bed straight to its store of bits,
bed.write_streamed; bed.read_held where identical samples are collapsed) must write the bits a
brute-force reference makes from the genotypes, byte for byte, and every other file as the
pgenlib path through the codes does, whatever its memory bound (slabs of samples), strips,
blocks and threads.
Options that need pgenlib (samples, regions) must take it; broken .bed files must stop with one
line naming the file.
"""

import io
import json
import shutil
import threading

import numpy as np
import pytest
from genodata import random_genotypes

from genotile.core.encode import MISSING
from genotile.core.genotype import genotype_layout, genotype_planes
from genotile.errors import GenotileError
from genotile.io.readers import bed, bed_words
from genotile.io.readers.bed import BedReader
from genotile.io.readers.plink import PlinkReader
from genotile.pairs import stage as pairs_stage
from genotile.store import bits as bits_module
from genotile.store import duplicates, reuse
from genotile.store import pack as pack_module
from genotile.store import stage as store_stage

TWO_BIT = np.array([3, 2, 0], dtype=np.uint8)  # ALT (A1) count 0, 1, 2 -> .bed code; missing -> 01


def write_fileset(prefix, g: np.ndarray, seed: int = 0, padding: str = "zero") -> str:
    """A .bed/.bim/.fam of (samples, variants) ALT counts g (MISSING missing); padding bits of
    each record "zero" (as PLINK writes them) or "random" (which readers must ignore)."""
    n, m = g.shape
    codes = np.where(g == MISSING, 1, TWO_BIT[np.minimum(g, 2)]).T  # variants x samples
    width = bed_words.record_bytes(n)
    rng = np.random.default_rng(seed)
    padded = (
        rng.integers(0, 4, size=(m, 4 * width), dtype=np.uint8)
        if padding == "random"
        else np.zeros((m, 4 * width), dtype=np.uint8)
    )
    padded[:, :n] = codes
    q = padded.reshape(m, width, 4)
    records = q[..., 0] | (q[..., 1] << 2) | (q[..., 2] << 4) | (q[..., 3] << 6)
    with open(f"{prefix}.bed", "wb") as fh:
        fh.write(bed_words.MAGIC + records.astype(np.uint8).tobytes())
    with open(f"{prefix}.bim", "w") as fh:
        fh.writelines(f"{1 + v // 50}\trs{v}\t0\t{v + 1}\tT\tA\n" for v in range(m))
    with open(f"{prefix}.fam", "w") as fh:
        fh.writelines(f"0\ts{i}\t0\t0\t0\t-9\n" for i in range(n))
    return f"{prefix}.bed"


@pytest.fixture
def small_blocks(monkeypatch):
    """Slabs of a few quads and blocks of a few words: every path (slabs, blocks, threads) is taken;
    the store job's pass holds 32 samples at a time (several slabs), reads strips of 8 record
    bytes (a record with one pread each) a word of variants at a time and writes a row a pwrite."""
    monkeypatch.setattr(bed_words, "QUADS", 3)
    monkeypatch.setattr(bed_words, "BLOCK_BYTES", 64 * 3)
    tiny_pass(monkeypatch)


def tiny_pass(monkeypatch) -> None:
    """The store job's pass at its smallest: a row held at a time (a pass over the .bed each; 32
    samples a slab in sample order), blocks of one word of records read a record a preadv into 2
    buffers, strips of one word of record bytes, one row a pwrite."""
    for name, value in [
        ("STREAM_BYTES", 1),
        ("BLOCK_BYTES", 1),
        ("TASK_WORDS", 1),
        ("DEPTH", 2),
        ("READ_BYTES", 1),
        ("STRIP_GROUPS", 1),
        ("STRIP_UNIT", 1),
        ("WRITE_BYTES", 1),
        ("HASH_ROWS", 3),
    ]:
        monkeypatch.setattr(bed, name, value)


def no_numpy_bed(monkeypatch) -> None:
    """BedReader reads every .bed with pgenlib, pack packs from the codes (the path before the numpy readers)."""
    monkeypatch.setattr(BedReader, "plain", property(lambda self: False))
    monkeypatch.setattr(PlinkReader, "held_bits", lambda self, threads=2, device=False: None)
    monkeypatch.setattr(pack_module, "plain_bed", lambda *a: None)


def store(path, out, **options) -> dict[str, bytes]:
    """Ingest, plan and pack (the fused store job's calls); the bytes of every file written."""
    out.mkdir()
    collapse = options.pop("collapse_duplicates", False)
    store_stage.ingest(
        path, "genotype", out / "codes.npy", out / "ingest.json", collapse_duplicates=collapse, **options
    )
    store_stage.plan(out / "ingest.json", 5, 3, out / "plan.json", out / "perm.npy")
    store_stage.pack(
        out / "codes.npy", out / "ingest.json", out / "plan.json", out / "perm.npy", out / "planes.npy", out / "m.json"
    )
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


CASES = [  # samples, variants, p_missing, padding
    (1, 1, 0.0, "zero"),
    (2, 63, 0.3, "random"),
    (3, 64, 0.1, "random"),
    (4, 65, 0.0, "zero"),
    (5, 130, 0.1, "random"),
    (13, 200, 0.05, "zero"),
    (26, 129, 1.0, "random"),  # every call missing
    (37, 301, 0.1, "random"),
]


@pytest.mark.parametrize("n, m, p_missing, padding", CASES)
@pytest.mark.parametrize("threads", [1, 2])
def test_codes_and_counts_equal_pgenlib(tmp_path, small_blocks, n, m, p_missing, padding, threads):
    g = random_genotypes(n, m, p_missing=p_missing, seed=n * m)
    path = write_fileset(tmp_path / "x", g, seed=n, padding=padding)
    fast, slow = BedReader(path), BedReader(path)
    slow.numpy_bed = False
    assert fast.plain and not slow.plain
    assert fast.write_sample_rows(tmp_path / "a.npy", threads=threads) == m
    assert slow.write_sample_rows(tmp_path / "b.npy", threads=threads) == m
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()
    assert np.array_equal(np.load(tmp_path / "a.npy"), g)
    assert fast.stats == slow.stats


@pytest.mark.parametrize("n, m, p_missing, padding", CASES)
def test_planes_equal_the_codes_planes(tmp_path, small_blocks, n, m, p_missing, padding):
    g = random_genotypes(n, m, p_missing=p_missing, seed=n + m)
    path = write_fileset(tmp_path / "x", g, seed=m, padding=padding)
    rows_of = np.random.default_rng(n).permutation(n)
    for threads in (1, 2):
        complete = bed.pack_planes(path, n, m, rows_of, tmp_path / "p.npy", threads=threads)
        layout = genotype_layout(g, "genotype")
        assert complete == layout.complete
        assert np.array_equal(np.load(tmp_path / "p.npy"), genotype_planes(g[rows_of], layout))
    distinct = rows_of[: max(1, n // 2)]  # collapsed duplicates: planes of some samples only
    bed.pack_planes(path, n, m, distinct, tmp_path / "d.npy", threads=2)
    assert np.array_equal(np.load(tmp_path / "d.npy"), genotype_planes(g[distinct], genotype_layout(g, "genotype")))


@pytest.mark.parametrize("n, m, p_missing, padding", [CASES[1], CASES[4], CASES[6], CASES[7]])
def test_store_bytes_equal_the_pgenlib_path(tmp_path, monkeypatch, small_blocks, n, m, p_missing, padding):
    g = random_genotypes(n, m, p_missing=p_missing, seed=7)
    path = write_fileset(tmp_path / "x", g, padding=padding)
    called = []
    for name in ("write_sample_rows", "pack_planes"):
        real = getattr(bed, name)
        monkeypatch.setattr(bed, name, lambda *a, real=real, name=name, **k: called.append(name) or real(*a, **k))
    fast = store(path, tmp_path / "fast", filter_pass=True)
    assert called == ["write_sample_rows", "pack_planes"]  # the numpy reader, then packing from the .bed
    with monkeypatch.context() as patch:
        no_numpy_bed(patch)
        slow = store(path, tmp_path / "slow", filter_pass=True)
    assert list(fast) == list(slow) and fast == slow


def test_collapsed_duplicates_and_a_complete_file(tmp_path, monkeypatch):
    g = random_genotypes(23, 150, p_missing=0.0, seed=5, special=False)
    g[7], g[19] = g[3], g[3]  # duplicate samples: the planes hold the distinct ones
    path = write_fileset(tmp_path / "x", g)
    fast = store(path, tmp_path / "fast", collapse_duplicates=True)
    with monkeypatch.context() as patch:
        no_numpy_bed(patch)
        slow = store(path, tmp_path / "slow", collapse_duplicates=True)
    assert fast == slow
    manifest = json.loads(fast["m.json"])
    assert manifest["n_distinct"] == 21 and manifest["layout"]["complete"] is True


def test_options_that_need_pgenlib_take_it(tmp_path, monkeypatch):
    g = random_genotypes(11, 120, seed=2)
    path = write_fileset(tmp_path / "x", g)
    (tmp_path / "keep.txt").write_text("s7\ns2\ns9\n")
    regions = "2:1-1000"  # variants 50 .. 99: chromosome 2
    assert not BedReader(path, samples=tmp_path / "keep.txt").plain
    assert not BedReader(path, regions=regions).plain
    assert BedReader(path, filter_pass=True, multiallelic="split").plain  # a .bed has no FILTER, one ALT
    called = []
    monkeypatch.setattr(bed, "write_sample_rows", lambda *a, **k: called.append(a))
    monkeypatch.setattr(bed, "pack_planes", lambda *a, **k: called.append(a))
    a = store(path, tmp_path / "samples", samples=tmp_path / "keep.txt")
    b = store(path, tmp_path / "regions", regions=regions)
    assert not called
    assert np.array_equal(np.load(tmp_path / "samples" / "codes.npy"), g[[7, 2, 9]])
    assert np.array_equal(np.load(tmp_path / "regions" / "codes.npy"), g[:, 50:100])
    assert json.loads(a["m.json"])["ids"] == ["s7", "s2", "s9"] and json.loads(b["ingest.json"])["n_fields"] == 50


def test_a_bed_changed_after_ingest_is_packed_from_the_codes(tmp_path):
    g = random_genotypes(9, 70, seed=3)
    path = write_fileset(tmp_path / "x", g)
    out = tmp_path / "s"
    out.mkdir()
    store_stage.ingest(path, "genotype", out / "codes.npy", out / "ingest.json")
    store_stage.plan(out / "ingest.json", 4, 1, out / "plan.json", out / "perm.npy")
    write_fileset(tmp_path / "x", random_genotypes(9, 70, seed=4))  # same size, other calls
    store_stage.pack(
        out / "codes.npy", out / "ingest.json", out / "plan.json", out / "perm.npy", out / "planes.npy", out / "m.json"
    )
    perm = np.load(out / "perm.npy")
    assert np.array_equal(np.load(out / "planes.npy"), genotype_planes(g[perm], genotype_layout(g, "genotype")))
    (tmp_path / "x.bed").unlink()  # gone: the codes too
    store_stage.pack(
        out / "codes.npy", out / "ingest.json", out / "plan.json", out / "perm.npy", out / "p2.npy", out / "m2.json"
    )
    assert (out / "p2.npy").read_bytes() == (out / "planes.npy").read_bytes()


def test_broken_beds_stop_with_one_line_naming_the_file(tmp_path):
    g = random_genotypes(10, 40, seed=1)
    path = write_fileset(tmp_path / "x", g)
    data = (tmp_path / "x.bed").read_bytes()
    cases = {
        "truncated": (data[:-1], r"x\.bed: 122 bytes, but 40 variants \(x\.bim\) x 10 samples \(x\.fam\) need 123$"),
        "longer": (data + b"\0", r"x\.bed: 124 bytes, but 40 variants .* need 123$"),
        "sample-major": (
            b"\x6c\x1b\x00" + data[3:],
            r"x\.bed: not a variant-major PLINK 1 \.bed \(magic bytes 6c1b00\)$",
        ),
        "not a bed": (b"##fileformat=VCFv4.2\n", r"x\.bed: not a variant-major PLINK 1 \.bed \(magic bytes 2323.*\)$"),
        "empty": (b"", r"x\.bed: not a variant-major PLINK 1 \.bed \(magic bytes \)$"),
    }
    for name, (content, message) in cases.items():
        (tmp_path / "x.bed").write_bytes(content)
        with pytest.raises(GenotileError, match=message) as info:
            store_stage.ingest(path, "genotype", tmp_path / "c.npy", tmp_path / "c.json")
        assert "\n" not in str(info.value) and str(tmp_path / "x.bed") in str(info.value), name
        with pytest.raises(GenotileError, match=message):
            bed.write_sample_rows(path, 10, 40, tmp_path / "c.npy", what=("x.bim", "x.fam"))
        with pytest.raises(GenotileError):
            bed.pack_planes(path, 10, 40, np.arange(10), tmp_path / "p.npy")
    assert not list(tmp_path.glob("c.*")) and not list(tmp_path.glob(".c.*"))  # nothing half-written by ingest


def test_bench_fileset_writer_agrees(tmp_path):
    """The benchmark's own .bed writer and this file's write the same bytes for the same calls."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("bench_plink", Path(__file__).parents[2] / "bench" / "bench_plink.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    truth = bench.write_bed(tmp_path / "b", 13, 50, 0.2, 3)
    write_fileset(tmp_path / "t", truth)
    assert (tmp_path / "b.bed").read_bytes() == (tmp_path / "t.bed").read_bytes()
    shutil.rmtree(tmp_path)


def store_job(path, out, collapse: bool = False, **options) -> dict[str, bytes]:
    """The workflow's store job (store_stage.store, its codes temporary); the bytes of every file it leaves."""
    store_stage.store(
        path, "genotype", out / "ingest.json", out / "store", 5, 3, options=options, collapse_duplicates=collapse
    )
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def as_read(out) -> dict:
    """A store job's files as the tiles read them: the store's planes (made from the bits of a
    held .bed, pack.open_store), its manifest but `stored`, every other file's bytes."""
    planes, manifest, _ = pack_module.open_store(out / "store" / "planes.npy", out / "store" / "manifest.json")
    manifest.pop("stored", None)
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    return {**files, "store/planes.npy": np.asarray(planes).tobytes(), "store/manifest.json": manifest}


def spy(monkeypatch, names) -> list[str]:
    """The names of the .bed's numpy readers (io/readers/bed.py) and of the bits' writer (store/bits.py),
    in the order they are called."""
    called: list[str] = []
    for name in names:
        module = bed if hasattr(bed, name) else bits_module
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, real=real, name=name, **k: called.append(name) or real(*a, **k))
    return called


def reference_counts(g: np.ndarray) -> dict:
    """The ingest counts of (samples, variants) codes, brute force: a variant is monomorphic
    without a REF allele or without an ALT allele among its calls."""
    called = g != MISSING
    has_ref, has_alt = (called & (g < 2)).any(axis=0), (called & (g > 0)).any(axis=0)
    return {
        "missing_calls": int((g == MISSING).sum()),
        "monomorphic": int((~(has_ref & has_alt)).sum()),
        "all_missing": int((g == MISSING).all(axis=0).sum()),
    }


def reference_bits(g: np.ndarray) -> np.ndarray:
    """uint64 (samples, 2, words): each call's lo and hi bit as the .bed holds them, 64 variants a
    word, bits past the last variant 0; brute force."""
    n, m = g.shape
    two_bit = np.zeros((n, 64 * -(-m // 64)), dtype=np.uint8)
    two_bit[:, :m] = np.where(g == MISSING, 1, TWO_BIT[np.minimum(g, 2)])  # hi lo as the .bed holds them
    lo, hi = (np.packbits(b, axis=1, bitorder="little").view("<u8") for b in (two_bit & 1, two_bit >> 1))
    return np.stack([lo, hi], axis=1) & bed_words.valid_bits(m)


def npy_bytes(array: np.ndarray) -> bytes:
    """The bytes of an .npy of `array` (numpy's own writer)."""
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


EXTRA_CASES = [(70, 700, 0.05, "random"), (203, 1000, 0.02, "random"), (130, 64, 0.0, "zero")]


@pytest.mark.parametrize("n, m, p_missing, padding", CASES + EXTRA_CASES)
@pytest.mark.parametrize("collapse", [False, True])
@pytest.mark.parametrize("bound", ["tiny", "default"])
@pytest.mark.parametrize("compiled", [True, False])
def test_store_job_writes_the_bed_in_one_pass_and_the_same_files(
    tmp_path, monkeypatch, n, m, p_missing, padding, collapse, bound, compiled
):
    g = random_genotypes(n, m, p_missing=p_missing, seed=n + 3 * m)
    if n >= 3:
        g[n - 1] = g[0]  # a duplicate sample besides random_genotypes' own
    if m >= 70:
        g[:, 66], g[:, 67], g[:, 68] = MISSING, 1, 0  # all missing; monomorphic (all het, all ref)
    path = write_fileset(tmp_path / "x", g, seed=n, padding=padding)
    with monkeypatch.context() as patch:
        patch.setattr(bed, "COMPILED_BYTES", 0 if compiled else 1 << 40)  # numba's transposer, or numpy's
        if bound == "tiny":  # slabs of 32 samples (spilled to a file where duplicates are collapsed)
            patch.setattr(bed_words, "QUADS", 3)
            patch.setattr(bed_words, "BLOCK_BYTES", 64 * 3)
            tiny_pass(patch)
        called = spy(patch, ["write_streamed", "read_held", "write_bits", "write_sample_rows", "pack_planes"])
        held = store_job(path, tmp_path / "held", collapse, filter_pass=True)
    # no codes; one reading of the .bed, straight into the store where the plan needs no count of it
    assert called == (["read_held", "write_bits"] if collapse else ["write_streamed"])
    with monkeypatch.context() as patch:
        no_numpy_bed(patch)
        slow = store_job(path, tmp_path / "pgenlib", collapse, filter_pass=True)
    assert list(held) == ["ingest.json", "store/manifest.json", "store/perm.npy", "store/plan.json", "store/planes.npy"]
    assert list(held) == list(slow) and not list((tmp_path / "held" / "store").glob(".*"))  # nothing left over
    # 2 bits a call on disk, the .bed's size, byte for byte as the reference makes them; every
    # other file the codes path's, its store manifest but `stored`
    manifest = json.loads(held["store/manifest.json"])
    rows_of = np.load(tmp_path / "held" / "store" / "perm.npy")
    if "distinct_index" in manifest:
        _, first = np.unique(manifest["distinct_index"], return_index=True)
        assert len(first) == len(np.unique(g, axis=0))
        rows_of = first[rows_of]
    else:
        assert not collapse or len(np.unique(g, axis=0)) == n
    assert held["store/planes.npy"] == npy_bytes(reference_bits(g)[rows_of].reshape(len(rows_of), -1))
    for name in ("ingest.json", "store/perm.npy", "store/plan.json"):
        assert held[name] == slow[name], name
    want = json.loads(slow["store/manifest.json"])
    keys = list(want)
    keys.insert(keys.index("ingest_counts") + 1, "stored")
    assert list(manifest) == keys and manifest == {**want, "stored": bits_module.STORED_BITS}
    assert as_read(tmp_path / "held") == as_read(tmp_path / "pgenlib")
    ingest_manifest = json.loads(held["ingest.json"])
    assert {k: ingest_manifest["counts"][k] for k in ("missing_calls", "monomorphic", "all_missing")} == (
        reference_counts(g)
    )
    layout = genotype_layout(g, "genotype")
    planes, _, _ = pack_module.open_store(
        tmp_path / "held" / "store" / "planes.npy", tmp_path / "held" / "store" / "manifest.json"
    )
    assert np.array_equal(np.asarray(planes), genotype_planes(g[rows_of], layout))
    if len(planes):  # rows read alone, as a slice, as a list, from the end: the same planes
        want_planes = genotype_planes(g[rows_of], layout)
        assert np.array_equal(planes[len(planes) - 1], want_planes[-1]) and np.array_equal(planes[-1], want_planes[-1])
        assert np.array_equal(planes[1:3], want_planes[1:3]) and np.array_equal(planes[[0, 0]], want_planes[[0, 0]])


@pytest.mark.parametrize("n, m", [(37, 301), (101, 64), (70, 700), (2100, 130)])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("tiny", [False, True])
@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("mapped", [0, 1, 2])
def test_bits_and_their_counts_against_brute_force(tmp_path, monkeypatch, n, m, threads, tiny, compiled, mapped):
    monkeypatch.setattr(bed, "COMPILED_BYTES", 0 if compiled else 1 << 40)
    monkeypatch.setattr(bed, "MAP_OUTPUT", mapped)  # held rows written with pwrite; the store mapped (populated)
    if tiny:
        tiny_pass(monkeypatch)
        monkeypatch.setattr(bed_words, "RECORD_RUN", 3)
    g = random_genotypes(n, m, p_missing=0.1, seed=threads)
    g[:, 7] = MISSING  # all missing
    g[:, 8] = 1  # monomorphic, all het
    path = write_fileset(tmp_path / "x", g, padding="random")
    want = reference_bits(g)
    counts = {"variants": m, **reference_counts(g)}
    rows_of = np.random.default_rng(n).permutation(n)
    for rows in (rows_of, rows_of[: n // 2]):  # every sample, or some (collapsed duplicates)
        got = bed.write_streamed(path, n, m, rows, tmp_path / "s.npy", threads=threads)
        assert (tmp_path / "s.npy").read_bytes() == npy_bytes(want[rows].reshape(rows.size, -1)) and got == counts
    hash_rows = lambda rows: duplicates.row_hashes(rows.reshape(len(rows), -1).view(np.uint8), threads=1)  # noqa: E731
    held, got = bed.read_held(bed.BedFile(path, n, m), threads, bed.STREAM_BYTES, tmp_path, hash_rows)
    assert got == counts and (held.bits is None) == tiny
    out = np.empty((n, 2, -(-m // 64)), dtype=np.uint64)
    assert np.array_equal(held.take_rows(rows_of, out), want[rows_of])
    if tiny:  # spilled to an unnamed file, hashed as they were held
        assert not list(tmp_path.glob(".genotile-bits.*"))
        assert np.array_equal(held.hashes, hash_rows(want))
    held.close()


@pytest.mark.parametrize("mapped", [True, False])
def test_the_pass_holds_at_most_its_bound(tmp_path, monkeypatch, mapped):
    """The store job's memory does not grow with the .bed: the rows each pass holds (held, or
    mapped from the store) are at most the bound (STREAM_BYTES, within
    ingest_genotypes.memory_bytes()), however many samples."""
    from genotile.store import ingest_genotypes

    monkeypatch.setattr(bed, "MAP_OUTPUT", mapped)
    g = random_genotypes(500, 200, p_missing=0.05, seed=8)
    path = write_fileset(tmp_path / "x", g)
    row_bytes = 16 * 4  # 4 words of variants, lo and hi
    held: list[int] = []
    real = bed._Pass.run
    monkeypatch.setattr(bed._Pass, "run", lambda self: held.append(self.part.held.nbytes) or real(self))
    monkeypatch.setattr(bed, "STREAM_BYTES", 64 * row_bytes)  # 64 rows a pass at most: 8 passes of 63
    whole = store_job(path, tmp_path / "a")
    assert held == [63 * row_bytes] * 7 + [59 * row_bytes]
    held.clear()
    monkeypatch.setattr(bed, "STREAM_BYTES", 1 << 40)  # within memory_bytes(), here made 96 rows
    monkeypatch.setattr(ingest_genotypes, "MEMORY_BYTES", 96 * row_bytes)
    assert ingest_genotypes.stream_bytes() == 96 * row_bytes
    assert store_job(path, tmp_path / "b") == whole and held == [84 * row_bytes] * 5 + [80 * row_bytes]
    held.clear()
    store_job(path, tmp_path / "c", collapse=True)  # held in sample order: slabs of 96 spilled to a file
    assert held == [96 * row_bytes] * 5 + [20 * row_bytes]
    monkeypatch.setattr(ingest_genotypes, "MEMORY_BYTES", None)
    held.clear()
    assert store_job(path, tmp_path / "d") == whole and held == [500 * row_bytes]  # one pass: every sample


def test_a_store_on_a_file_system_without_fallocate_is_written_from_held_rows(tmp_path, monkeypatch):
    g = random_genotypes(40, 130, seed=9)
    path = write_fileset(tmp_path / "x", g)
    mapped = store_job(path, tmp_path / "a")
    monkeypatch.setattr(bed, "reserve", lambda fd, size: False)  # no fallocate there: not mapped
    called = spy(monkeypatch, ["_write_rows"])
    assert store_job(path, tmp_path / "b") == mapped and called == ["_write_rows"]


def test_a_full_disk_stops_the_store_job_with_one_line(tmp_path, monkeypatch):
    """A store that the disk has no room for is refused as fallocate finds it (a write to a memory
    map would end the process with SIGBUS): one line naming the file, nothing left over."""
    import errno
    import os

    path = write_fileset(tmp_path / "x", random_genotypes(40, 130, seed=9))

    def full(fd, size):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(bed, "reserve", full)
    planes = tmp_path / "s" / "store" / "planes.npy"
    with pytest.raises(GenotileError, match=rf"^{planes}: could not be written: No space left on device$"):
        store_job(path, tmp_path / "s")
    assert not [p for p in (tmp_path / "s" / "store").iterdir() if p.name.startswith(".")]
    assert not (tmp_path / "s" / "ingest.json").exists()


def test_what_the_codes_path_keeps(tmp_path, monkeypatch):
    """`genotile run`'s kept codes, GPU packing insisted on and another encoding go
    through the codes; their stores are the streamed path's all the same."""
    g = random_genotypes(11, 120, seed=2)
    path = write_fileset(tmp_path / "x", g)
    (tmp_path / "keep.txt").write_text("s7\ns2\ns9\n")
    assert BedReader(path, filter_pass=True).held_bits() == bed.BedFile(path, 11, 120, ("x.bim", "x.fam"))
    picked = BedReader(path, samples=tmp_path / "keep.txt").held_bits()  # pgenlib's subset (test_pgen_stream.py)
    assert picked is not None and picked.pgen is not None and picked.pgen.columns.tolist() == [1, 0, 2]
    regions = BedReader(path, regions="1:1-10").held_bits()  # pgenlib's counts of them (test_pgen_stream.py)
    assert regions is not None and regions.pgen is not None and regions.n_variants == 10
    with pytest.raises(GenotileError, match="unknown VCF option"):
        store_job(path, tmp_path / "bogus", bogus=1)
    called = spy(monkeypatch, ["write_streamed", "read_held", "write_sample_rows", "pack_planes"])
    monkeypatch.setenv("GENOTILE_GPU_PACK", "1")  # GPU packing insisted on: the codes (packed from the .bed here)
    monkeypatch.setattr(pack_module, "use_gpu_packing", lambda gpu=None: False)
    store_job(path, tmp_path / "gpu")
    assert called == ["write_sample_rows"]
    monkeypatch.delenv("GENOTILE_GPU_PACK")
    monkeypatch.undo()
    store_job(path, tmp_path / "held")
    held = as_read(tmp_path / "held")
    called = spy(monkeypatch, ["write_streamed", "read_held", "write_sample_rows", "pack_planes"])
    (tmp_path / "run").mkdir()
    reuse.current_store(path, "genotype", tmp_path / "run", 5, 3)
    assert called == ["write_sample_rows", "pack_planes"]  # the codes are kept: reused to replan
    planes, _, _ = pack_module.open_store(
        tmp_path / "run" / "store" / "genotype" / "planes.npy",
        tmp_path / "run" / "store" / "genotype" / "manifest.json",
    )
    assert np.asarray(planes).tobytes() == held["store/planes.npy"]


def test_a_broken_bed_stops_the_store_job_with_nothing_written(tmp_path):
    g = random_genotypes(10, 40, seed=1)
    path = write_fileset(tmp_path / "x", g)
    (tmp_path / "x.bed").write_bytes((tmp_path / "x.bed").read_bytes()[:-1])
    message = r"x\.bed: 122 bytes, but 40 variants \(x\.bim\) x 10 samples \(x\.fam\) need 123$"
    with pytest.raises(GenotileError, match=message):
        store_job(path, tmp_path / "s")
    assert not (tmp_path / "s" / "ingest.json").exists() and not list((tmp_path / "s" / "store").iterdir())


@pytest.mark.parametrize("collide", [False, True])
def test_distinct_samples_equal_distinct_rows(monkeypatch, collide):
    rng = np.random.default_rng(4)
    words = rng.integers(0, 4, size=(600, 3), dtype=np.uint64)  # 64 values: many copies, past HASH_ROWS
    words[:, 1] = 0
    if collide:  # every row one hash in distinct_samples' own calls (threads=1, a chunk of rows each):
        real = duplicates.row_hashes  # the copies' check finds different rows and falls back

        def one_hash(rows, threads=None):
            return np.zeros((rows.shape[0], 2), np.uint64) if threads == 1 else real(rows, threads)

        monkeypatch.setattr(duplicates, "row_hashes", one_hash)
    first, index = duplicates.distinct_samples(words, threads=2)
    want_first, want_index = duplicates.distinct_rows(words.view(np.uint8))
    assert np.array_equal(first, want_first) and np.array_equal(index, want_index)
    assert first.size == len(np.unique(words, axis=0))


@pytest.mark.parametrize("m", [1, 64, 130])
def test_held_planes_equal_planes(m):
    rng = np.random.default_rng(m)
    words = -(-m // 64)
    valid = bed_words.valid_bits(m)
    lo, hi = (rng.integers(0, 2**64, size=(9, words), dtype=np.uint64) & valid for _ in range(2))
    want, got = (np.empty((9, 5, words), dtype=np.uint64) for _ in range(2))
    bed._planes(lo, hi, valid, [want[:, p] for p in range(5)])
    bits_module.held_planes(lo, hi, valid, [got[:, p] for p in range(5)])
    assert np.array_equal(got, want)


def test_the_store_job_of_a_bed_imports_no_codes_path(tmp_path):
    """A job's imports are part of its fixed cost: the streamed path imports neither the VCF
    reader's text path and compiled decoders, cyvcf2, pgenlib nor zarr, nor the tile and merge
    stages' code; nor numba for a .bed below bed.COMPILED_BYTES (its transposer is numpy's there)."""
    import subprocess
    import sys

    path = write_fileset(tmp_path / "x", random_genotypes(9, 70, seed=3))
    unwanted = [
        "genotile.io.vcf_fast",
        "genotile.io.tilefile",
        "genotile.io.peer_formats",
        "genotile.pairs.tilecheck",
        "pgenlib",
        "cyvcf2",
        "numba",
        "zarr",
    ]
    script = (
        "import sys\nfrom genotile.store import stage as store_stage\n"
        f"store_stage.store({path!r}, 'genotype', {str(tmp_path / 'i.json')!r}, {str(tmp_path / 's')!r}, 4, 1)\n"
        "print(' '.join(m for m in sys.argv[1:] if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, *unwanted], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == [] and (tmp_path / "s" / "planes.npy").exists()


def tile_arrays(store, metric: str, bi: int, bj: int, backend: str, out) -> dict:
    """The arrays of one tile of a store (pairs_stage.tile, the dense block kept)."""
    from genotile.io.tilefile import read_tile

    pairs_stage.tile(
        store / "planes.npy",
        store / "manifest.json",
        store / "perm.npy",
        metric,
        bi,
        bj,
        threshold=None,
        dense=True,
        backend=backend,
        tile_out=out,
    )
    arrays, _, _ = read_tile(out)
    return arrays


@pytest.mark.parametrize("metric", ["ibs", "king"])
def test_tiles_of_a_held_bed_equal_the_codes_paths(tmp_path, monkeypatch, metric):
    """The planes a tile makes from the store's bits count as the planes packed from the codes."""
    g = random_genotypes(23, 150, p_missing=0.05, seed=5)
    path = write_fileset(tmp_path / "x", g, padding="random")
    store_job(path, tmp_path / "held")
    with monkeypatch.context() as patch:
        no_numpy_bed(patch)
        store_job(path, tmp_path / "codes")
    for bi, bj in [(0, 0), (1, 3)]:
        held = tile_arrays(tmp_path / "held" / "store", metric, bi, bj, "numpy", tmp_path / "a.tile")
        codes = tile_arrays(tmp_path / "codes" / "store", metric, bi, bj, "numpy", tmp_path / "b.tile")
        assert held.keys() == codes.keys() and all(np.array_equal(held[k], codes[k], equal_nan=True) for k in held)


@pytest.mark.skipif(
    not __import__("genotile.backends.cuda.cupy_common", fromlist=["has_gpu"]).has_gpu(),
    reason="no CUDA GPU / CuPy: the GPU tiles of a .bed's store of bits are not testable here",
)
@pytest.mark.parametrize("backend", ["cupy-b1", "cupy-int8"])
@pytest.mark.parametrize("metric", ["ibs", "king"])
def test_gpu_tiles_of_a_held_bed_equal_numpys(tmp_path, backend, metric):
    g = random_genotypes(45, 200, p_missing=0.05, seed=4)
    path = write_fileset(tmp_path / "x", g, padding="random")
    store_job(path, tmp_path / "held")
    store = tmp_path / "held" / "store"
    for bi, bj in [(0, 0), (1, 4)]:
        want = tile_arrays(store, metric, bi, bj, "numpy", tmp_path / "a.tile")
        got = tile_arrays(store, metric, bi, bj, backend, tmp_path / "b.tile")
        assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k], equal_nan=True) for k in want)


def test_bits_planes_are_indexed_by_rows_only():
    planes = bits_module.BitsPlanes(np.zeros((2, 2), dtype=np.uint64), 10)
    assert planes[0:2].shape == (2, 5) and planes[[1]].shape == (1, 5)
    with pytest.raises(TypeError, match="rows only"):
        planes[:, 0:1]


def test_a_store_of_bits_that_does_not_fit_its_layout_is_refused(tmp_path):
    path = write_fileset(tmp_path / "x", random_genotypes(9, 130, seed=2))
    store_job(path, tmp_path / "s")
    manifest_path = tmp_path / "s" / "store" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["n_kept"] = 300  # 5 words a plane, where the layout and the file have 3
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(GenotileError, match="does not fit its layout"):
        pack_module.open_store(tmp_path / "s" / "store" / "planes.npy", manifest_path)


def test_a_bed_shorter_than_when_checked_stops_naming_it(tmp_path, monkeypatch, small_blocks):
    """A .bed cut after open_bed checked its size (changed while read): one line naming it."""
    g = random_genotypes(10, 300, seed=1)
    path = write_fileset(tmp_path / "x", g)
    real = bed.open_bed

    def check_then_cut(*args, **kwargs):
        out = real(*args, **kwargs)
        with open(path, "r+b") as fh:
            fh.truncate(100)
        return out

    monkeypatch.setattr(bed, "open_bed", check_then_cut)
    with pytest.raises(GenotileError, match=r"x\.bed: cannot read its records"):
        bed.write_streamed(path, 10, 300, np.arange(10), tmp_path / "s.npy", threads=2)
    write_fileset(tmp_path / "x", g)
    monkeypatch.setattr(bed, "READ_BYTES", 1 << 24)  # a block's records with one preadv
    with pytest.raises(GenotileError, match=r"x\.bed: cannot read its records"):
        bed.read_held(bed.BedFile(path, 10, 300), threads=2)


def test_a_bed_cut_after_ingest_stops_the_store_job_with_one_line(tmp_path, monkeypatch):
    """The store job reads a plain .bed after the plan: cut in between, it stops with one line
    naming it, and neither its store nor its ingest manifest is left."""
    g = random_genotypes(10, 300, seed=1)
    path = write_fileset(tmp_path / "x", g)
    real = store_stage.plan

    def plan_then_cut(*args, **kwargs):
        out = real(*args, **kwargs)
        (tmp_path / "x.bed").write_bytes((tmp_path / "x.bed").read_bytes()[:-1])
        return out

    monkeypatch.setattr(store_stage, "plan", plan_then_cut)
    message = r"x\.bed: 902 bytes, but 300 variants \(x\.bim\) x 10 samples \(x\.fam\) need 903$"
    with pytest.raises(GenotileError, match=message) as info:
        store_job(path, tmp_path / "s")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "s" / "ingest.json").exists() and not (tmp_path / "s" / "store" / "planes.npy").exists()
    assert not list((tmp_path / "s" / "store").glob(".*"))


class HostSink:
    """A sink of the pass (`bed.stream_to`) that transposes each block on the host with numpy's
    transposer (bed_words.records_to_bits): what backends/cuda/bed_device.DeviceBits does on the
    GPU, so that the pass's hand-over (every block once, whole, its first word) is tested here."""

    def __init__(self, rows_of: np.ndarray, n: int, m: int):
        words = -(-m // 64)
        self.place = np.full(n, -1, dtype=np.int64)
        self.place[rows_of] = np.arange(rows_of.size)
        self.n, self.out, self.missing = n, np.zeros((rows_of.size, 2, words), dtype=np.uint64), 0
        self.flags = np.zeros((3, words), dtype=np.uint64)
        self.first_words: list[int] = []
        self.lock = threading.Lock()

    def buffer(self, nbytes: int) -> np.ndarray:
        return np.full(nbytes, 0xA5, dtype=np.uint8)  # poisoned: only the records read may be used

    def block(self, words: np.ndarray, n_records: int, first_word: int) -> None:
        with self.lock:  # the pass's threads hand blocks over at once, as to DeviceBits (its lock)
            self.first_words.append(first_word)
            self.missing += bed_words.records_to_bits(
                words, n_records, 0, words.shape[1], self.n, self.place, self.out, first_word, self.flags
            )

    def counts(self) -> tuple[np.ndarray, int]:
        return self.flags, self.missing


@pytest.mark.parametrize("n, m", [(37, 301), (101, 64), (2100, 130)])
@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("tiny", [False, True])
def test_a_pass_into_a_sink_hands_it_every_block_once(tmp_path, monkeypatch, n, m, threads, tiny):
    if tiny:
        tiny_pass(monkeypatch)
    g = random_genotypes(n, m, p_missing=0.1, seed=threads)
    g[:, 7] = MISSING
    path = write_fileset(tmp_path / "x", g, padding="random")
    rows_of = np.random.default_rng(n).permutation(n)
    sink = HostSink(rows_of, n, m)
    got = bed.stream_to(path, n, m, sink, threads=threads)
    assert got == {"variants": m, **reference_counts(g)}
    assert np.array_equal(sink.out, reference_bits(g)[rows_of])
    assert sorted(sink.first_words) == sorted(set(sink.first_words)) and 0 in sink.first_words
