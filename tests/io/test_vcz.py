"""VCF-Zarr input: the same IDs, codes, counts and outputs as the VCF it was made from.

The .vcz stores are bio2zarr's own conversions of the VCFs (`bio2zarr vcf2zarr`, its Python
API), so the layout is the one users would have: missing and half-missing calls, multi-allelic
records, FILTERs, '.' IDs and two contigs, read with every VCF option. Every genotype metric
(ibs, king, ccc2, ccc3) is run on the VCF and the .vcz (`genotile run`'s run_all, the workflow)
and the output files compared byte for byte; an edit of one chunk of the store reruns it.
"""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from genodata import HEADER, random_genotypes, vcf_text, write_vcf

from genotile.errors import GenotileError
from genotile.io.readers.vcz import VczReader
from genotile.pipeline import run_all, run_ccc3
from genotile.store import ingest as ingest_module
from genotile.store.inputs import check_input
from genotile.store.sources import content_digest, sources

RECORDS = [
    "1 10 rs1 A G . PASS . GT 0/0 0/1 1/1 ./.",
    "1 20 . A G,T . q10 . GT 1|0 0|2 1|1 2/2",
    "1 30 . A G . . . GT ./. . ./1 0/1",
    "1 35 . A . . . . GT 0/0 0/0 0/0 0/0",
    "1 40 rs4 C T . q10 . GT 0/1 1/1 0/0 1/.",
    "2 5 . G A,C,T . PASS . GT 0/3 1/2 ./. 0/0",
    "2 50 rs6 T C . PASS . GT 1/1 1/1 1/1 1/1",
]
SAMPLES = ("a", "b", "c", "d")
OPTIONS = [
    {},
    {"multiallelic": "split"},
    {"filter_pass": True},
    {"samples": ["d", "b", "a"]},
    {"regions": "1:15-35,2"},
    {"multiallelic": "split", "filter_pass": True, "regions": ["2", "1:1-20"], "samples": ["c", "a"]},
]


def vcf_of(records, samples=SAMPLES) -> str:
    head = "#CHROM POS ID REF ALT QUAL FILTER INFO FORMAT " + " ".join(samples)
    return HEADER + "\n".join(line.replace(" ", "\t") for line in [head, *records]) + "\n"


def to_vcz(vcf_gz: Path) -> Path:
    """bio2zarr's conversion of an indexed .vcf.gz, beside it."""
    from bio2zarr.vcf import convert  # the test extra's: a missing bio2zarr fails, not skips, these tests

    out = vcf_gz.parent / (vcf_gz.name.removesuffix(".vcf.gz") + ".vcz")
    convert([str(vcf_gz)], str(out), worker_processes=0)
    return out


def pair(root: Path, text: str, name: str = "x") -> tuple[Path, Path]:
    """(indexed .vcf.gz, .vcz made from it)."""
    vcf = write_vcf(root / f"{name}.vcf.gz", text, index=True)
    return vcf, to_vcz(vcf)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return pair(tmp_path_factory.mktemp("vcz"), vcf_of(RECORDS))


@pytest.fixture(scope="module")
def random_pair(tmp_path_factory):
    g = random_genotypes(23, 150, p_missing=0.1, seed=3)
    ids = [f"rs{v}" if v % 3 else "." for v in range(g.shape[1])]
    return pair(tmp_path_factory.mktemp("vczr"), vcf_text(g, ids=ids, seed=3))


def ingest(path, encoding, out: Path, **options) -> tuple[dict, np.ndarray]:
    made = ingest_module.ingest(path, encoding, out.with_suffix(".npy"), out.with_suffix(".json"), **options)
    return made.manifest, np.load(out.with_suffix(".npy"))


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("encoding", ["genotype", "genotype_t"])
def test_ids_codes_and_counts_equal_the_vcf(small, tmp_path, options, encoding):
    vcf, vcz = small
    theirs, want = ingest(vcf, encoding, tmp_path / "v", **options)
    ours, got = ingest(vcz, encoding, tmp_path / "z", **options)
    assert np.array_equal(got, want)
    for key in ("ids", "field_ids", "counts", "n_vectors", "n_fields", "n_kept", "options", "encoding"):
        assert ours.get(key) == theirs.get(key), key
    assert ours["format"] == "vcz" and theirs["format"] == "vcf"


def test_blocks_equal_the_vcf_readers(random_pair):
    from genotile.io.readers.vcf import VcfReader

    vcf, vcz = random_pair
    with VcfReader(vcf) as a, VczReader(vcz) as b:
        ours = list(b.blocks(max_rows=7))
        theirs = list(a.blocks(max_rows=7))
        assert [i for ids, _ in ours for i in ids] == [i for ids, _ in theirs for i in ids]
        assert np.array_equal(np.concatenate([c for _, c in ours]), np.concatenate([c for _, c in theirs]))
        assert a.stats == b.stats and a.samples == b.samples


@pytest.mark.parametrize(
    "call, what",
    [
        ("0", "haploid call"),
        ("0/0/1", "a call of 3 alleles"),
        ("0/2", "allele index 2 but 1 ALT"),
    ],
)
def test_bad_calls_name_the_record_and_sample(tmp_path, call, what):
    records = ["1 10 . A G . PASS . GT 0/1 0/0 1/1 0/0", f"1 20 . A G . PASS . GT 0/1 {call} 1/1 0/0"]
    _, vcz = pair(tmp_path, vcf_of(records))
    with pytest.raises(GenotileError) as err:
        ingest(vcz, "genotype", tmp_path / "z")
    message = str(err.value)
    assert str(vcz) in message and "record 1:20" in message and "sample 'b'" in message and what in message


def test_option_and_input_errors(small, tmp_path):
    _, vcz = small
    with pytest.raises(GenotileError, match="requested sample"):
        VczReader(vcz, samples=["a", "zz"])
    with pytest.raises(GenotileError, match="no region's contig is in the file"):
        VczReader(vcz, regions="9")
    with pytest.raises(GenotileError, match="unknown VCF option"):
        ingest(vcz, "genotype", tmp_path / "z", bogus=1)
    with pytest.raises(GenotileError, match="a VCF-Zarr store holds genotypes .* not an alignment"):
        ingest(vcz, "nucleotide", tmp_path / "z")
    (tmp_path / "empty.vcz").mkdir()
    with pytest.raises(GenotileError, match="not a VCF-Zarr store|not a readable Zarr group"):
        VczReader(tmp_path / "empty.vcz")
    with pytest.raises(GenotileError, match="no such directory"):
        VczReader(tmp_path / "absent.vcz")


def test_input_kind_and_metrics(small):
    _, vcz = small
    assert check_input(vcz, ["ibs"]) == "vcz" and check_input(f"{vcz}/", ["king"]) == "vcz"
    assert check_input(vcz, ["ibs", "ccc3"], {"samples": ["a"]}) == "vcz"
    with pytest.raises(GenotileError, match="is a VCF-Zarr store, but metric.s. snp need a FASTA alignment"):
        check_input(vcz, ["snp"])


def _outputs(outdir: Path) -> dict[str, bytes]:
    names = ("pairs.tsv.gz", "matrix.tsv", "histogram.tsv", "triples.tsv.gz")
    return {str(p.relative_to(outdir)): p.read_bytes() for p in sorted(outdir.rglob("*")) if p.name in names}


def test_every_genotype_metric_gives_the_vcf_outputs(random_pair, tmp_path):
    for name, source in zip(("vcf", "vcz"), random_pair, strict=True):
        out = tmp_path / name
        run_all(source, out, ["ibs", "king", "ccc2"], block_size=7, backend="numpy")
        run_ccc3(out / "store" / "genotype_t", out / "ccc3", block_size=40, threshold=0.5, backend="numpy")
    ours, theirs = _outputs(tmp_path / "vcz"), _outputs(tmp_path / "vcf")
    assert sorted(ours) == sorted(theirs) and len(ours) == 3 * 3 + 1
    for name in theirs:
        assert ours[name] == theirs[name], name
    counts = [json.loads((tmp_path / n / "ingest" / "genotype.json").read_text())["counts"] for n in ("vcz", "vcf")]
    assert counts[0] == counts[1]


def _edit_a_chunk(vcz: Path) -> None:
    """Flip one call of call_genotype in place (its chunk rewritten by zarr)."""
    import zarr

    gt = zarr.open_group(str(vcz), mode="r+")["call_genotype"]
    gt[3, 5, 0] = 1 - gt[3, 5, 0] if gt[3, 5, 0] >= 0 else 0


def test_content_is_a_digest_over_the_stores_files(random_pair, tmp_path):
    _, vcz = random_pair
    copy = tmp_path / "c.vcz"
    shutil.copytree(vcz, copy)
    before = sources(copy)["input"]
    assert before["size"] == sum(p.stat().st_size for p in copy.rglob("*") if p.is_file())
    assert before["digest"] == content_digest(vcz)  # the same files, wherever they are
    _edit_a_chunk(copy)
    assert sources(copy)["input"]["digest"] != before["digest"]


def test_genotile_run_recomputes_the_store_of_an_edited_chunk(random_pair, tmp_path, caplog):
    vcf, vcz = random_pair
    copy = tmp_path / "c.vcz"
    shutil.copytree(vcz, copy)
    run_all(copy, tmp_path / "o", ["ibs"], block_size=7, backend="numpy")
    _edit_a_chunk(copy)
    with caplog.at_level("INFO", logger="genotile"):
        run_all(copy, tmp_path / "o", ["ibs"], block_size=7, backend="numpy")
    assert "ingest (genotype): recomputing, changed since the last run: input content" in caplog.text
    run_all(copy, tmp_path / "fresh", ["ibs"], block_size=7, backend="numpy")
    assert _outputs(tmp_path / "o") == _outputs(tmp_path / "fresh")


def test_workflow_takes_a_vcz_and_reruns_on_an_edited_chunk(random_pair, tmp_path):
    from snakerun import jobs_run, snakemake

    vcf, vcz = random_pair
    shutil.copy(vcf, tmp_path / "x.vcf.gz")
    shutil.copytree(vcz, tmp_path / "x.vcz")
    config = {  # ccc3's workflow is run_all's (above): its jobs are many for 2 cores
        "datasets": {
            "vcf": {"input": "x.vcf.gz", "metrics": ["ibs", "king", "ccc2"]},
            "vcz": {"input": "x.vcz", "metrics": ["ibs", "king", "ccc2"]},
        },
        "backend": "numpy",
    }
    snakemake(tmp_path, config)
    results = tmp_path / "results"
    ours, theirs = _outputs(results / "vcz"), _outputs(results / "vcf")
    assert sorted(ours) == sorted(theirs) and len(ours) >= 3
    for name in theirs:
        assert ours[name] == theirs[name], name
    _edit_a_chunk(tmp_path / "x.vcz")
    chunk = max((p for p in (tmp_path / "x.vcz" / "call_genotype").rglob("*") if p.is_file()), key=os.path.getmtime)
    os.utime(chunk, (1_000_000_000, 1_000_000_000))  # an mtime older than every output: the content tells
    proc = snakemake(tmp_path, config)
    assert jobs_run(proc.stderr).get("store") == 2  # the .vcz's two stores (genotype, genotype_t), not the VCF's


def _damaged(vcz: Path, tmp_path: Path, how: str) -> Path:
    """A copy of the store with one part broken as `how` says."""
    import zarr

    copy = tmp_path / f"{how}.vcz"
    shutil.copytree(vcz, copy)
    root = zarr.open_group(str(copy), mode="r+")
    if how == "chunk":  # a chunk of call_genotype cut short
        chunk = max(
            (p for p in (copy / "call_genotype").rglob("*") if p.is_file() and not p.name.startswith(".")),
            key=lambda p: p.stat().st_size,
        )
        chunk.write_bytes(chunk.read_bytes()[:10])
    elif how == "contig":  # a variant naming a contig past contig_id
        root["variant_contig"][0] = len(root["contig_id"][:]) + 5
    elif how == "allele":  # an allele index no writer gives
        root["call_genotype"][2, 1, 0] = -7
    elif how == "metadata":  # call_genotype's metadata no longer describes an array
        meta = next(p for p in (copy / "call_genotype").iterdir() if p.name in (".zarray", "zarr.json"))
        meta.write_text("{not json")
    return copy


@pytest.mark.parametrize(
    "how, words",
    [
        ("chunk", "cannot read call_genotype"),
        ("contig", "contig index"),
        ("allele", "allele index -7"),
        ("metadata", ""),
    ],
)
def test_a_damaged_store_is_one_clear_error(random_pair, tmp_path, how, words):
    """A damaged store ends in one GenotileError naming it, never in zarr's or numcodecs' traceback."""
    _, vcz = random_pair
    bad = _damaged(vcz, tmp_path, how)
    with pytest.raises(GenotileError) as info:
        ingest(bad, "genotype", tmp_path / "out")
    message = str(info.value)
    assert str(bad) in message and words in message and "\n" not in message, message
