"""Query mode (issue 27, `against:`): every vector of the input against every vector of a FILE.

Brute force from the sequences and codes themselves; the workflow, `genotile run` and the API
agree byte for byte (pairs.tsv.gz) or value for value (the API's arrays); mismatched inputs are
refused in one line, before anything is written.
"""

import gzip
import importlib.util

import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf
from snakerun import snakemake, write_fasta

import genotile
from genotile.backends.cuda import cupy_common
from genotile.cli import main
from genotile.core.plan import Plan
from genotile.pipeline import run_all

ACGT = np.frombuffer(b"ACGT", dtype=np.uint8)
needs_gpu = pytest.mark.skipif(
    not cupy_common.has_gpu(), reason="no CUDA GPU / CuPy: the GPU query tests need a device"
)


def brute_snp(x: list[str], y: list[str]) -> np.ndarray:
    """snp-dists' distance of every (x, y) pair: columns where both are ACGT (any case) and differ."""
    a = np.frombuffer("".join(x).upper().encode(), dtype=np.uint8).reshape(len(x), -1)
    b = np.frombuffer("".join(y).upper().encode(), dtype=np.uint8).reshape(len(y), -1)
    va, vb = np.isin(a, ACGT), np.isin(b, ACGT)
    out = np.zeros((len(x), len(y)), dtype=np.int64)
    for i in range(len(x)):
        out[i] = ((a[i] != b) & va[i] & vb).sum(axis=1)
    return out


def sequences(rng, n: int, length: int, base: np.ndarray, p: float) -> list[str]:
    out = []
    for _ in range(n):
        s = base.copy()
        hit = rng.random(length) < p
        s[hit] = rng.choice(list("ACGTacgtNN-RY"), int(hit.sum()))
        out.append("".join(s))
    return out


@pytest.fixture(scope="module")
def alignments(tmp_path_factory):
    """300 input sequences against 500: a column constant within each file but not between them
    (informative only in the two together), and a name in both files."""
    rng = np.random.default_rng(27)
    length = 240
    base = rng.choice(list("ACGT"), length)
    x = sequences(rng, 300, length, base, 0.03)
    y = sequences(rng, 500, length, base, 0.03)
    x = [s[:5] + "A" + s[6:] for s in x]
    y = [s[:5] + "C" + s[6:] for s in y]
    root = tmp_path_factory.mktemp("query")
    ids_x = write_fasta(root / "new.fa", x, [f"new{i}" for i in range(299)] + ["shared"])
    ids_y = write_fasta(root / "db.fa", y, ["shared"] + [f"db{i}" for i in range(1, 500)])
    return root, x, y, ids_x, ids_y


def expected_lines(ids_x, ids_y, d: np.ndarray, threshold) -> list[str]:
    keep = np.argwhere(d <= threshold) if threshold is not None else np.argwhere(np.ones_like(d, dtype=bool))
    return [f"{ids_x[i]}\t{ids_y[j]}\t{d[i, j]}" for i, j in keep]


def pairs_lines(path) -> list[str]:
    with gzip.open(path, "rt") as fh:
        return fh.read().splitlines()


def test_plan_tiles_only_cross_pairs():
    p = Plan(n_vectors=23, block_size=4, seed=5, n_against=9)
    assert (p.n_query, p.query_blocks, p.n_blocks) == (14, 4, 7)
    rows = [p.block(k) for k in range(p.n_blocks)]
    assert [(r.start, r.stop) for r in rows] == [(0, 4), (4, 8), (8, 12), (12, 14), (14, 18), (18, 22), (22, 23)]
    assert p.tiles() == [(i, j) for i in range(4) for j in range(4, 7)]
    cells = sum((p.block(i).stop - p.block(i).start) * (p.block(j).stop - p.block(j).start) for i, j in p.tiles())
    assert cells == p.n_pairs == 14 * 9  # every cross pair once, nothing else
    perm = p.permutation()
    assert sorted(perm[:14]) == list(range(14)) and sorted(perm[14:]) == list(range(14, 23))
    assert Plan.from_json(p.to_json()) == p
    assert "n_against" not in Plan(10, 4, 1).to_json()  # all-pairs plans as they were


def test_snp_query_equals_brute_force(alignments, tmp_path):
    root, x, y, ids_x, ids_y = alignments
    d = brute_snp(x, y)
    for threshold in (None, 6):
        out = tmp_path / f"t{threshold}"
        s = run_all(
            root / "new.fa",
            out,
            ["snp"],
            thresholds={"snp": threshold},
            block_size=64,
            backend="numpy",
            against=root / "db.fa",
            opt_in={"formats": ["snp-dists-molten"]},
        )["snp"]
        lines = pairs_lines(out / "snp" / "pairs.tsv.gz")
        assert lines[0] == "id1\tid2\tsnp"
        assert lines[1:] == expected_lines(ids_x, ids_y, d, threshold)
        assert s["pairs_computed"] == 300 * 500 and s["plan"]["n_tiles"] == 5 * 8
        assert s["query"] | {"input_sha256": 0, "against_sha256": 0} == {
            "input": str(root / "new.fa"),
            "input_sha256": 0,
            "n_input": 300,
            "against": str(root / "db.fa"),
            "against_sha256": 0,
            "n_against": 500,
            "pairs": 150000,
        }
        # matrix.tsv: rows the input, columns the FILE
        text = (out / "snp" / "matrix.tsv").read_text().splitlines()
        assert text[0].split("\t") == ["", *ids_y]
        assert [r.split("\t")[0] for r in text[1:]] == ids_x
        assert np.array_equal(np.array([[int(v) for v in r.split("\t")[1:]] for r in text[1:]]), d)
        # histogram over the 150,000 cross pairs
        hist = [r.split("\t") for r in (out / "snp" / "histogram.tsv").read_text().splitlines()[1:]]
        counts = {int(low): int(c) for _, low, _high, c in hist}
        assert sum(counts.values()) == d.size
        assert all(counts.get(v, 0) == int((d == v).sum()) for v in range(int(d.max()) + 1))
        molten = (out / "snp" / "snp-dists.molten.tsv").read_text().splitlines()
        assert molten == [f"{ids_x[i]}\t{ids_y[j]}\t{d[i, j]}" for i in range(300) for j in range(500)]
    # the shared name's pair is reported like any other
    assert any(line.startswith("shared\tshared\t") for line in pairs_lines(tmp_path / "tNone" / "snp" / "pairs.tsv.gz"))


def test_block_size_and_seed_change_no_byte(alignments, tmp_path):
    root, *_ = alignments
    outs = []
    for k, (block_size, seed) in enumerate(((64, 1), (37, 9), (1000, 2))):
        run_all(
            root / "new.fa",
            tmp_path / str(k),
            ["snp"],
            thresholds={"snp": 8},
            block_size=block_size,
            seed=seed,
            backend="numpy",
            against=root / "db.fa",
        )
        outs.append((tmp_path / str(k) / "snp" / "pairs.tsv.gz").read_bytes())
    assert outs[0] == outs[1] == outs[2]


def test_workflow_cli_and_api_agree(alignments, tmp_path):
    root, x, y, ids_x, ids_y = alignments
    work = tmp_path / "wf"
    work.mkdir()
    config = {
        "datasets": {"q": {"input": str(root / "new.fa"), "against": str(root / "db.fa"), "metrics": ["snp"]}},
        "thresholds": {"snp": 8},
        "block_size": 128,
        "backend": "numpy",
    }
    proc = snakemake(work, config)
    assert "query: 300 vectors against 500" in proc.stderr
    cli = ["run", str(root / "new.fa"), "--against", str(root / "db.fa"), "--metric", "snp", "--threshold", "snp=8"]
    assert main([*cli, "--outdir", str(tmp_path / "cli"), "--backend", "numpy", "-q"]) == 0
    wf = (work / "results" / "q" / "snp" / "pairs.tsv.gz").read_bytes()
    assert wf == (tmp_path / "cli" / "snp" / "pairs.tsv.gz").read_bytes()
    assert (work / "results" / "q" / "snp" / "matrix.tsv").read_bytes() == (
        tmp_path / "cli" / "snp" / "matrix.tsv"
    ).read_bytes()
    r = genotile.pairwise(root / "new.fa", "snp", against=root / "db.fa", threshold=8, backend="numpy")
    lines = [f"{a}\t{b}\t{v}" for a, b, v in zip(r.pairs["id1"], r.pairs["id2"], r.values["snp"], strict=True)]
    assert lines == gzip.decompress(wf).decode().splitlines()[1:]
    assert np.array_equal(r.matrix(), brute_snp(x, y))
    # nothing reruns when nothing changed
    again = snakemake(work, config)
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.parametrize("n, r", [(6, 3), (1, 1), (100, 100)])
def test_a_small_query_runs_in_the_workflow(tmp_path, n, r):
    """The default block size holds both sides in one block each: a query plan has one more
    block than its vectors make, and each tile's store part is still the one part (Plan.part_of_block)."""
    rng = np.random.default_rng(n)
    base = rng.choice(list("ACGT"), 90)
    x, y = sequences(rng, n, 90, base, 0.1), sequences(rng, r, 90, base, 0.1)
    write_fasta(tmp_path / "new.fa", x, [f"n{i}" for i in range(n)])
    write_fasta(tmp_path / "db.fa", y, [f"d{i}" for i in range(r)])
    config = {
        "datasets": {"q": {"input": str(tmp_path / "new.fa"), "against": str(tmp_path / "db.fa"), "metrics": ["snp"]}},
        "thresholds": {"snp": None},
        "report": False,
    }
    snakemake(tmp_path, config)
    rows = gzip.decompress((tmp_path / "results/q/snp/pairs.tsv.gz").read_bytes()).decode().splitlines()[1:]
    got = {(a, b): int(v) for a, b, v in (line.split("\t") for line in rows)}
    want = brute_snp(x, y)
    assert got == {(f"n{i}", f"d{j}"): int(want[i, j]) for i in range(n) for j in range(r)}


@pytest.fixture(scope="module")
def genotypes(tmp_path_factory):
    root = tmp_path_factory.mktemp("qgeno")
    g = random_genotypes(70, 150, seed=11)
    g[45] = g[3]  # the same genotypes in both sets
    samples = [f"s{i}" for i in range(30)] + [f"t{i}" for i in range(40)]
    ids = [f"v{k}" for k in range(150)]
    write_vcf(root / "all.vcf", vcf_text(g, samples, ids))
    write_vcf(root / "new.vcf", vcf_text(g[:30], samples[:30], ids, seed=1))
    db = vcf_text(g[30:], samples[30:], ids, seed=2)
    write_vcf(root / "db.vcf", db)  # the GPU tests' (the GPU machine has no pysam to bgzip with)
    if importlib.util.find_spec("pysam") is not None:
        write_vcf(root / "db.vcf.gz", db)
    return root, g


@pytest.mark.parametrize("metric", ["king", "ibs"])
def test_genotype_query_equals_union_cross_pairs(genotypes, tmp_path, metric):
    """The cross pairs of an all-pairs run over both sets (one VCF of all samples), byte for byte."""
    root, g = genotypes
    threshold = {"king": 0.0, "ibs": None}[metric]
    kw = {"thresholds": {metric: threshold}, "block_size": 16, "backend": "numpy"}
    run_all(root / "new.vcf", tmp_path / "q", [metric], against=root / "db.vcf.gz", **kw)
    run_all(root / "all.vcf", tmp_path / "all", [metric], **kw)
    union = pairs_lines(tmp_path / "all" / metric / "pairs.tsv.gz")
    cross = [union[0]] + [line for line in union[1:] if line.startswith("s") and line.split("\t")[1].startswith("t")]
    assert pairs_lines(tmp_path / "q" / metric / "pairs.tsv.gz") == cross
    full = genotile.pairwise(np.where(g == 255, -1, g).astype(int), metric, backend="numpy", matrix=True).matrix()
    r = genotile.pairwise(root / "new.vcf", metric, against=root / "db.vcf.gz", backend="numpy")
    assert np.array_equal(r.matrix(), full[:30, 30:], equal_nan=True)


def test_ccc2_query_compares_variants_over_the_same_samples(genotypes):
    root, g = genotypes
    a, b = g[:, :90], g[:, 90:]
    full = genotile.pairwise(g, "ccc2", backend="numpy", matrix=True)
    # variant IDs name the outputs: a ccc2 query's two sets need their own (the defaults 0, 1, ... repeat)
    ids, against_ids = [f"a{k}" for k in range(90)], [f"b{k}" for k in range(60)]
    r = genotile.pairwise(a, "ccc2", against=b, backend="numpy", block_size=32, ids=ids, against_ids=against_ids)
    assert r.matrix().shape == (90, 60)
    assert np.array_equal(r.matrix(), full.matrix()[:90, 90:])
    assert np.array_equal(r.b - r.n_query, np.tile(np.arange(60), 90))


def test_mismatched_inputs_refused_in_one_line(alignments, genotypes, tmp_path, capsys):
    root, x, *_ = alignments
    short = write_fasta(tmp_path / "short.fa", [s[:-1] for s in x[:3]]) and tmp_path / "short.fa"
    groot, g = genotypes
    write_vcf(tmp_path / "fewer.vcf", vcf_text(g[30:, :149], None, [f"v{k}" for k in range(149)]))
    write_vcf(tmp_path / "other.vcf", vcf_text(g[30:], None, [f"w{k}" for k in range(150)]))
    cases = [
        (root / "new.fa", short, "snp", "holds sequences of length 239, but the input"),
        (groot / "new.vcf", tmp_path / "fewer.vcf", "king", "holds 149 variants, the input"),
        (groot / "new.vcf", tmp_path / "other.vcf", "ibs", "variant 1 is 'w0' there, 'v0' in the input"),
        (root / "new.fa", groot / "db.vcf.gz", "snp", "a query compares vectors of one kind"),
        (groot / "new.vcf", groot / "db.vcf.gz", "ccc3", "against: is for 2-way metrics"),
        (root / "new.fa", tmp_path / "nothere.fa", "snp", f"{tmp_path / 'nothere.fa'}: no such file"),
        (tmp_path / "nothere.fa", root / "db.fa", "snp", f"{tmp_path / 'nothere.fa'}: no such file"),
    ]
    for k, (inp, against, metric, message) in enumerate(cases):
        out = tmp_path / f"never{k}"
        assert main(["run", str(inp), "--against", str(against), "--metric", metric, "--outdir", str(out)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("genotile error: ") and message in err and err.count("\n") == 1, err
        assert not (out / metric).exists()
    king = ["run", str(groot / "new.vcf"), "--against", str(groot / "db.vcf.gz"), "--metric", "king"]
    assert main([*king, "--format", "kin0", "--outdir", str(tmp_path / "k")]) == 1
    assert "formats: kin0 describe all pairs of one set" in capsys.readouterr().err


def test_a_missing_side_after_a_query_store_is_one_line(alignments, tmp_path, capsys):
    """The input or FILE gone where an earlier query store is there: refused by name, as without
    a store (the store's reuse check read the files' state first: a FileNotFoundError's traceback
    before); the earlier results left as they were."""
    root, *_ = alignments
    for name in ("new.fa", "db.fa"):
        (tmp_path / name).write_bytes((root / name).read_bytes())
    out = tmp_path / "out"
    run = ["run", str(tmp_path / "new.fa"), "--against", str(tmp_path / "db.fa"), "--metric", "snp"]
    assert main([*run, "--threshold", "snp=8", "--outdir", str(out)]) == 0
    before = (out / "snp" / "pairs.tsv.gz").read_bytes()
    capsys.readouterr()
    for name in ("db.fa", "new.fa"):
        (tmp_path / name).rename(tmp_path / f"{name}.away")
        assert main([*run, "--threshold", "snp=8", "--outdir", str(out)]) == 1
        err = capsys.readouterr().err
        assert err == f"genotile error: {tmp_path / name}: no such file\n", err
        assert (out / "snp" / "pairs.tsv.gz").read_bytes() == before
        (tmp_path / f"{name}.away").rename(tmp_path / name)


def test_workflow_refuses_a_query_config_in_one_line(alignments, tmp_path):
    root, *_ = alignments
    config = {
        "datasets": {
            "q": {"input": str(root / "new.fa"), "against": str(root / "db.fa"), "metrics": ["snp"]},
        },
        "thresholds": {"snp": 8},
    }
    bad = {**config, "datasets": {"q": {**config["datasets"]["q"], "formats": ["snp-dists-csv"], "metrics": ["snp"]}}}
    snakemake(tmp_path, bad, "-n")  # snp-dists-csv holds the rectangle: allowed
    bad["datasets"]["q"]["metrics"] = ["snp"]
    bad["datasets"]["q"]["against"] = str(root / "missing.vcf")
    proc = snakemake(tmp_path, bad, "-n", check=False)
    assert proc.returncode == 1
    assert (
        "genotile error: dataset q: against: " in proc.stderr and "a query compares vectors of one kind" in proc.stderr
    )


@needs_gpu
@pytest.mark.parametrize("metric", ["snp", "king", "ibs"])
def test_gpu_query_same_bytes_as_cpu(alignments, genotypes, tmp_path, metric):
    """The GPU's tiles (cupy-b1, fused epilogues) give the CPU's bytes, threshold and matrix alike."""
    root, *_ = alignments
    groot, _ = genotypes
    inp, against = (root / "new.fa", root / "db.fa") if metric == "snp" else (groot / "new.vcf", groot / "db.vcf")
    threshold = {"snp": 8, "king": 0.0, "ibs": None}[metric]
    out = {}
    for backend in ("numpy", "cupy-b1"):
        run_all(inp, tmp_path / backend, [metric], thresholds={metric: threshold}, block_size=64, backend=backend,
                against=against)  # fmt: skip
        out[backend] = [
            (tmp_path / backend / metric / f).read_bytes() for f in ("pairs.tsv.gz", "matrix.tsv", "histogram.tsv")
        ]
    assert out["numpy"] == out["cupy-b1"]


@needs_gpu
def test_gpu_ccc2_query_equals_cpu(genotypes):
    _, g = genotypes
    ids, against_ids = [f"a{k}" for k in range(90)], [f"b{k}" for k in range(60)]
    kw = {"against": g[:, 90:], "ids": ids, "against_ids": against_ids, "block_size": 32, "threshold": 0.3}
    cpu = genotile.pairwise(g[:, :90], "ccc2", backend="numpy", **kw)
    gpu = genotile.pairwise(g[:, :90], "ccc2", backend="cupy-b1", **kw)
    assert np.array_equal(cpu.a, gpu.a) and np.array_equal(cpu.b, gpu.b)
    assert all(np.array_equal(cpu.values[c], gpu.values[c]) for c in cpu.values)


def test_two_fasta_files_held_as_one_make_the_store_of_their_parts(alignments, tmp_path, monkeypatch):
    """Two regular FASTA files are gathered, folded and counted as one (store/query.py
    held_alignments); the query store is byte for byte the one of the parts read record by record
    (read_part); an irregular file (lines of other widths) is read by read_part."""
    from genotile.store import query

    root = alignments[0]
    made = query.held_alignments(root / "new.fa", root / "db.fa", "nucleotide")
    assert made is not None and made[2].held is not None and made[2].rows.shape == (800, 240)
    stores = {}
    for label, held in (("held", query.held_alignments), ("parts", lambda *a, **k: None)):
        monkeypatch.setattr(query, "held_alignments", held)
        out = tmp_path / label
        query.query_store(root / "new.fa", root / "db.fa", "nucleotide", out / "ingest.json", out / "store", 64, 3)
        stores[label] = {f: (out / f).read_bytes() for f in ("ingest.json", "store/planes.npy", "store/manifest.json")}
    assert stores["held"] == stores["parts"]
    monkeypatch.undo()
    lines = (root / "db.fa").read_text().splitlines(keepends=True)
    irregular = tmp_path / "irregular.fa"
    irregular.write_text(lines[0] + lines[1].rstrip("\n") + lines[2] + "".join(lines[3:]))  # a longer first line
    assert query.held_alignments(root / "new.fa", irregular, "nucleotide") is None
    monkeypatch.setenv("GENOTILE_GPU_PACK", "1")  # packing from codes insisted on: nothing held
    assert query.held_alignments(root / "new.fa", root / "db.fa", "nucleotide") is None


def test_a_query_store_granted_one_gpu_counts_its_tiles_in_a_forked_worker(alignments, tmp_path):
    """A query's store job granted one GPU (here by `--set-resources`, on a machine that may have
    none; `tiles_in_store: true` computes them on the CPU there) counts its cross tiles in a worker
    forked first thing in the job (scripts/store.py, early.one_gpu_worker): the same bytes as the tile
    jobs' own."""
    root = alignments[0]
    outputs = {}
    for name, in_store in (("worker", True), ("jobs", False)):
        work = tmp_path / name
        work.mkdir()
        config = {
            "datasets": {"q": {"input": str(root / "new.fa"), "against": str(root / "db.fa"), "metrics": ["snp"]}},
            "thresholds": {"snp": 8},
            "block_size": 128,
            "tiles_in_store": in_store,
        }
        snakemake(work, config, "--set-resources", "store:gpu=1", "--resources", "gpu=1")
        log = next((work / "logs" / "q").glob("store.*.log")).read_text()
        assert ("on 1 GPUs" in log) is in_store, log
        outputs[name] = [(work / "results" / "q" / "snp" / f).read_bytes() for f in ("pairs.tsv.gz", "histogram.tsv")]
    assert outputs["worker"] == outputs["jobs"]
