"""The Python API's edges (issue 28): what it refuses, whose names and orientation it takes, what it returns.

- refused as the file readers refuse them: infinities and values that are no genotype, a
  genotype array to snp (and sequences to ibs), text IDs, several characters in one cell;
- thresholds checked by the workflow's own check (core/limits.check_threshold);
- a pandas object's index names the rows; scikit-allel's and sgkit's genotypes (variants first)
  are read in their own orientation, the same numbers as the (samples, variants) array; sgkit
  and allel are not dependencies, so their duck-typed paths are also tested with small stand-ins;
- snp/hamming matrices are integers (as matrix.tsv), results print in one short line, triplewise
  returns a result object, the defaults are the workflow's (config/config.yaml).
"""

import doctest
import inspect
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from genodata import MISSING, random_genotypes

import genotile
from genotile import settings
from genotile.core import ccc3
from genotile.core.limits import check_threshold
from genotile.core.metrics import get_metric
from genotile.errors import GenotileError
from genotile.io.readers import array, array_objects
from genotile.io.tsvgz import format_column
from genotile.pipeline import run_all

pd = pytest.importorskip("pandas", reason="the API's tables are pandas DataFrames")
ROOT = Path(__file__).resolve().parents[1]


def rows_of(result) -> list[tuple]:
    """A result's pairs as pairs.tsv.gz's text rows (id1, id2, every value; NaN as text)."""
    ids = np.asarray(result.ids, dtype=object)
    values = [format_column(v) for v in result.values.values()]
    return list(zip(ids[result.a], ids[result.b], *values, strict=True))


@pytest.fixture(scope="module")
def g():
    """(12 samples, 30 variants) ALT counts, missing -1, with the corner cases of genodata."""
    raw = random_genotypes(12, 30, p_missing=0.1, seed=4)
    return np.where(raw == MISSING, -1, raw).astype(np.int8)


def calls_of(g: np.ndarray) -> np.ndarray:
    """(variants, samples, 2) allele calls of (samples, variants) ALT counts, as allel and sgkit hold them."""
    first = np.where(g < 0, -1, (g == 2).astype(np.int8)).T
    second = np.where(g < 0, -1, (g >= 1).astype(np.int8)).T
    return np.stack([first, second], axis=-1).astype(np.int8)


@pytest.mark.parametrize("module", [array, array_objects])
def test_docstring_examples_of_the_array_readers(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 3 and result.failed == 0


# -- values the readers refuse -----------------------------------------------------------------


@pytest.mark.parametrize(
    "value, hint",
    [
        (np.inf, "an infinity is not a missing call: use NaN or -1"),
        (-np.inf, "an infinity is not a missing call: use NaN or -1"),
        (0.5, "dosages are not supported"),
        (3.0, ""),
        (254.0, ""),
    ],
)
def test_a_value_that_is_no_genotype_is_refused_naming_it_and_the_allowed_values(value, hint):
    x = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0]])
    x[1, 2] = value
    with pytest.raises(GenotileError) as refused:
        genotile.pairwise(x, "ibs", backend="numpy")
    message = str(refused.value)
    assert message.startswith(f"the genotype array, shape (2, 3): value {value!r} at row 1, column 2")
    assert "genotypes are ALT allele counts 0, 1, 2, a missing call as a negative number, NaN or 255" in message
    assert hint in message


def test_the_documented_missing_markers_are_one_missing_call():
    """-1, -9, NaN and 255 all read as a missing call: the same pairs as with -1 everywhere."""
    x = np.array([[0, 1, 2, -1], [2, 1, -1, 0], [0, 0, 2, 2]])
    reference = rows_of(genotile.pairwise(x, "ibs", backend="numpy"))
    for marker in (-9, 255):
        assert rows_of(genotile.pairwise(np.where(x < 0, marker, x), "ibs", backend="numpy")) == reference
    as_float = np.where(x < 0, np.nan, x.astype(float))
    assert rows_of(genotile.pairwise(as_float, "ibs", backend="numpy")) == reference


def test_ids_given_as_one_string_are_refused():
    with pytest.raises(
        GenotileError, match=r"^ids must be a sequence of names, one per sample, not the single str 'abc'"
    ):
        genotile.pairwise(np.zeros((3, 4), dtype=int), "ibs", ids="abc")


def test_a_cell_of_several_characters_is_refused_not_cut_to_its_first():
    with pytest.raises(GenotileError, match=r"'AC' at row 0, column 0 is not one character"):
        genotile.pairwise(np.array([["AC", "G"], ["A", "G"]]), "snp")


def test_genotypes_to_snp_and_sequences_to_ibs_say_which_is_which(g):
    with pytest.raises(GenotileError) as refused:
        genotile.pairwise(g, "snp")
    message = str(refused.value)
    assert "genotypes (ALT allele counts), read by ibs, king, ccc2 and ccc3, not sequences" in message
    assert "input.fa" not in message and "0xff" not in message
    with pytest.raises(GenotileError, match=r"holds text \(sequences\?\): an alignment is for snp and hamming"):
        genotile.pairwise(["ACGT", "ACGA"], "ibs")
    with pytest.raises(GenotileError, match=r"allele calls \(variants, samples, ploidy\)\?"):
        genotile.pairwise(calls_of(g), "ibs")  # a bare (variants, samples, 2) array: no way to read it safely


# -- thresholds --------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, [0.1], {"king": 0.1}, "0.1", True])
def test_a_threshold_the_workflow_refuses_is_refused_with_its_words(bad, g):
    with pytest.raises(GenotileError) as workflow:
        check_threshold(bad, "threshold")
    with pytest.raises(GenotileError) as api:
        genotile.pairwise(g, "king", threshold=bad, backend="numpy")
    assert str(api.value) == str(workflow.value) == f"threshold must be a finite number or null, not {bad!r}"
    with pytest.raises(GenotileError, match="^threshold must be a finite number or null"):
        genotile.triplewise(g, threshold=bad, backend="numpy")


def test_numpy_scalars_are_numbers(g):
    plain = rows_of(genotile.pairwise(g, "king", threshold=0.0, backend="numpy"))
    assert rows_of(genotile.pairwise(g, "king", threshold=np.float64(0.0), backend="numpy")) == plain
    assert rows_of(genotile.pairwise(g, "king", threshold=np.int64(0), backend="numpy")) == plain
    r = genotile.pairwise(g, "king", threshold=np.float32(0.0), backend="numpy")
    assert rows_of(r) == plain and type(r.threshold) is float


# -- pandas: the index names the rows --------------------------------------------------------


def test_a_dataframe_index_names_the_samples_and_its_columns_the_variants(g):
    samples = [f"ind{k}" for k in range(g.shape[0])]
    variants = [f"rs{k}" for k in range(g.shape[1])]
    df = pd.DataFrame(g, index=samples, columns=variants)
    r = genotile.pairwise(df, "ibs", backend="numpy")
    assert r.ids == samples and rows_of(r) == rows_of(genotile.pairwise(g, "ibs", ids=samples, backend="numpy"))
    assert genotile.pairwise(df, "ccc2", backend="numpy").ids == variants  # ccc2 compares the variants
    given = [f"x{k}" for k in range(g.shape[0])]
    assert genotile.pairwise(df, "ibs", ids=given, backend="numpy").ids == given  # ids win
    flipped = genotile.pairwise(df.T, "ibs", rows="variants", backend="numpy")  # variants x samples
    assert rows_of(flipped) == rows_of(r)


def test_a_dataframe_of_nullable_integers_reads_na_as_missing(g):
    df = pd.DataFrame(g).astype("Int8").mask(pd.DataFrame(g < 0))  # -1 -> pd.NA
    assert df.isna().to_numpy().sum() == (g < 0).sum() > 0
    assert rows_of(genotile.pairwise(df, "king", backend="numpy")) == rows_of(
        genotile.pairwise(g, "king", backend="numpy")
    )


def test_a_series_and_a_dataframe_of_characters_name_their_sequences():
    seqs = pd.Series(["ACGTN", "ACGAA", "TCGTA"], index=["p", "q", "r"])
    r = genotile.pairwise(seqs, "snp", backend="numpy")
    assert r.ids == ["p", "q", "r"] and r.values["snp"].tolist() == [1, 1, 2]
    chars = pd.DataFrame([list(s) for s in seqs], index=seqs.index)
    assert rows_of(genotile.pairwise(chars, "snp", backend="numpy")) == rows_of(r)


# -- orientation: scikit-allel and sgkit, variants first --------------------------------------


def test_rows_variants_reads_a_variants_by_samples_array(g):
    expected = rows_of(genotile.pairwise(g, "king", backend="numpy"))
    assert rows_of(genotile.pairwise(g.T, "king", rows="variants", backend="numpy")) == expected
    with pytest.raises(GenotileError, match=r"^rows must be 'samples' .* or 'variants' .*, not 'columns'"):
        genotile.pairwise(g, "king", rows="columns")
    with pytest.raises(GenotileError, match="rows is for arrays"):
        genotile.pairwise(ROOT / "resources" / "example" / "example.vcf.gz", "king", rows="variants")


@pytest.mark.peers
def test_scikit_allel_genotypes_are_read_variants_first(g):
    allel = pytest.importorskip("allel", reason="scikit-allel (a test extra) reads its own objects")
    gt = allel.GenotypeArray(calls_of(g))  # (variants, samples, 2)
    expected = genotile.pairwise(g, "king", backend="numpy")
    assert rows_of(genotile.pairwise(gt, "king", backend="numpy")) == rows_of(expected)
    n_alt = gt.to_n_alt(fill=-1)  # a plain (variants, samples) array: rows="variants" says so
    assert rows_of(genotile.pairwise(n_alt, "king", rows="variants", backend="numpy")) == rows_of(expected)
    ccc2 = genotile.pairwise(gt, "ccc2", backend="numpy")
    assert rows_of(ccc2) == rows_of(genotile.pairwise(g, "ccc2", backend="numpy"))
    t = genotile.triplewise(gt[:8], backend="numpy")
    assert t.triples.equals(genotile.triplewise(g[:, :8], backend="numpy").triples)
    masked = allel.GenotypeArray(calls_of(g))
    masked.mask = np.zeros(masked.shape[:2], dtype=bool)
    masked.mask[5, 3] = True  # variant 5 of sample 3: missing, as allel's to_n_alt reads it
    hidden = g.copy()
    hidden[3, 5] = -1
    assert rows_of(genotile.pairwise(masked, "ibs", backend="numpy")) == rows_of(
        genotile.pairwise(hidden, "ibs", backend="numpy")
    )
    haplotypes = gt.to_haplotypes()  # (variants, 2 x samples): each haplotype a vector of 0/1
    h = genotile.pairwise(haplotypes, "ibs", backend="numpy")
    assert len(h.ids) == 2 * g.shape[0]
    assert rows_of(h) == rows_of(genotile.pairwise(np.asarray(haplotypes).T, "ibs", backend="numpy"))
    with pytest.raises(GenotileError, match=r"^rows='samples', but scikit-allel's GenotypeArray holds variants first"):
        genotile.pairwise(gt, "king", rows="samples")
    with pytest.raises(GenotileError, match="allele index 2: a multi-allelic variant; genotypes count one ALT allele"):
        genotile.pairwise(allel.GenotypeArray([[[0, 2], [0, 0]]]), "ibs")
    with pytest.raises(GenotileError, match="^the alignment is scikit-allel's GenotypeArray: genotypes"):
        genotile.pairwise(gt, "snp")


class AllelLike:
    """A stand-in for scikit-allel's GenotypeArray (recognised by its type's module and name)."""

    def __init__(self, calls, mask=None):
        self.calls, self.mask = calls, mask

    def __array__(self, dtype=None, copy=None):
        return self.calls


AllelLike.__module__ = "allel.model.ndarray"
AllelLike.__name__ = AllelLike.__qualname__ = "GenotypeArray"


class DataArrayLike:
    """A stand-in for an xarray DataArray: named dims over values."""

    def __init__(self, values, dims):
        self.values, self.dims = np.asarray(values), tuple(dims)


class DatasetLike(dict):
    """A stand-in for an sgkit (xarray) Dataset: variables by name, `data_vars` and `dims`."""

    @property
    def data_vars(self):
        return self

    @property
    def dims(self):
        return {d: n for v in self.values() for d, n in zip(v.dims, v.values.shape, strict=True)}


def test_allel_like_objects_are_recognised_without_allel(g):
    calls = calls_of(g)
    expected = rows_of(genotile.pairwise(g, "ibs", backend="numpy"))
    assert rows_of(genotile.pairwise(AllelLike(calls), "ibs", backend="numpy")) == expected
    mask = np.zeros(calls.shape[:2], dtype=bool)
    mask[0, :] = True  # variant 0 hidden for everyone
    hidden = g.copy()
    hidden[:, 0] = -1
    assert rows_of(genotile.pairwise(AllelLike(calls, mask), "ibs", backend="numpy")) == rows_of(
        genotile.pairwise(hidden, "ibs", backend="numpy")
    )
    with pytest.raises(GenotileError, match="ploidy 3: only diploid calls are supported"):
        genotile.pairwise(AllelLike(np.zeros((2, 3, 3), dtype=np.int8)), "ibs")


def sgkit_like(g, sample_ids, variant_ids=None, order=("variants", "samples", "ploidy")):
    """An sgkit-shaped dataset of g, call_genotype's axes in `order`."""
    calls = calls_of(g)  # (variants, samples, ploidy)
    axes = [("variants", "samples", "ploidy").index(d) for d in order]
    ds = DatasetLike(
        call_genotype=DataArrayLike(np.transpose(calls, axes), order),
        sample_id=DataArrayLike(np.array(sample_ids, dtype=object), ("samples",)),
    )
    if variant_ids is not None:
        ds["variant_id"] = DataArrayLike(np.array(variant_ids, dtype=object), ("variants",))
    return ds


def test_an_sgkit_dataset_is_read_by_its_dims_and_names_its_samples_and_variants(g):
    samples = [f"S{k}" for k in range(g.shape[0])]
    variants = [f"rs{k}" for k in range(g.shape[1])]
    expected = genotile.pairwise(g, "king", ids=samples, backend="numpy")
    for order in (("variants", "samples", "ploidy"), ("samples", "ploidy", "variants")):
        r = genotile.pairwise(sgkit_like(g, samples, variants, order), "king", backend="numpy")
        assert r.ids == samples and rows_of(r) == rows_of(expected)
    ccc2 = genotile.pairwise(sgkit_like(g, samples, variants), "ccc2", backend="numpy")
    assert ccc2.ids == variants
    unnamed = ["."] * g.shape[1]  # no IDs ('.'): the variants are named by their index
    assert genotile.pairwise(sgkit_like(g, samples, unnamed), "ccc2", backend="numpy").ids[:2] == ["0", "1"]
    # a DataArray of ALT counts with named dims: read by the names, whatever their order
    counts = DataArrayLike(g.T, ("variants", "samples"))
    assert rows_of(genotile.pairwise(counts, "king", ids=samples, backend="numpy")) == rows_of(expected)


def test_sgkit_calls_follow_the_vcf_readers_rules(g):
    samples = [f"S{k}" for k in range(g.shape[0])]
    ds = sgkit_like(g, samples)
    gt = ds["call_genotype"].values
    gt[4, 2] = [1, -1]  # half-missing: missing, as the VCF reader reads ./1
    gt[5, 2] = [-1, -2]  # a missing haploid call, padded
    half = g.copy()
    half[2, 4] = half[2, 5] = -1
    assert rows_of(genotile.pairwise(ds, "ibs", backend="numpy")) == rows_of(
        genotile.pairwise(half, "ibs", ids=samples, backend="numpy")
    )
    gt[6, 3] = [1, -2]  # a called haploid call: refused, as the VCF reader refuses it
    with pytest.raises(GenotileError, match=r"call_genotype: variant 6, sample 'S3': haploid call \(allele 1\)"):
        genotile.pairwise(ds, "ibs")
    with pytest.raises(GenotileError, match="has no call_genotype variable"):
        genotile.pairwise(DatasetLike(sample_id=ds["sample_id"]), "ibs")
    with pytest.raises(GenotileError, match=r"^rows='samples', but an xarray Dataset \(sgkit\) holds variants first"):
        genotile.pairwise(ds, "ibs", rows="samples")


# -- results -----------------------------------------------------------------------------------


def test_snp_and_hamming_matrices_are_integers_as_matrix_tsv(tmp_path):
    seqs = ["ACGTNACGTA", "ACGAAACGTT", "TCGTAACCTA", "ACGTAAC-TA"]
    fasta = tmp_path / "a.fa"
    fasta.write_text("".join(f">q{k}\n{s}\n" for k, s in enumerate(seqs)))
    run_all(fasta, tmp_path / "run", ["snp", "hamming"], backend="numpy")
    for metric in ("snp", "hamming"):
        r = genotile.pairwise(seqs, metric, backend="numpy")
        text = (tmp_path / "run" / metric / "matrix.tsv").read_text().splitlines()[1:]
        written = np.array([[int(v) for v in line.split("\t")[1:]] for line in text])
        assert r.matrix().dtype == np.int64 and np.array_equal(r.matrix(), written)
        assert r.to_sparse().dtype == r.matrix().dtype
    assert genotile.pairwise(np.array([[0, 1], [1, 2]]), "king", backend="numpy").matrix().dtype == np.float64


def test_a_result_prints_in_one_short_line():
    g = random_genotypes(40, 60, seed=2)
    r = genotile.pairwise(g, "king", backend="numpy")
    text = repr(r)
    assert text == (
        "PairwiseResult(metric='king', vectors=40, pairs=780, threshold=None, "
        "columns=['nsnp', 'hethet', 'ibs0', 'kinship'], matrix=(40, 40) float64)"
    )
    t = genotile.triplewise(g[:, :6], threshold=0.3, backend="numpy")
    assert repr(t).startswith("TriplewiseResult(metric='ccc3', vectors=6, triples=") and "\n" not in repr(t)


def test_triplewise_returns_a_result_with_its_table_and_arrays(g):
    t = genotile.triplewise(g[:, :7], backend="numpy")
    assert isinstance(t, genotile.TriplewiseResult) and t.a.size == 35  # C(7, 3): no threshold
    table = t.triples
    assert list(table.columns) == ["id1", "id2", "id3", *(f"ccc_{k:03b}" for k in range(8))]
    assert table["id3"].tolist() == [t.ids[k] for k in t.c] and np.all((t.a < t.b) & (t.b < t.c))


def test_an_unknown_metric_lists_each_metric_once():
    with pytest.raises(GenotileError) as refused:
        genotile.pairwise(np.zeros((3, 4), dtype=int), "nope")
    known = "snp, hamming, ibs, king, ccc2"
    assert str(refused.value) == f"unknown metric 'nope'; pairwise takes {known} (ccc3: triplewise)"
    with pytest.raises(GenotileError) as refused:  # the registry's own message, which the CLI's paths give
        get_metric("nope")
    assert str(refused.value) == "unknown metric 'nope'; known: ccc2, hamming, ibs, king, snp"


def test_the_defaults_are_the_workflows(g, monkeypatch):
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    for function in (genotile.pairwise, genotile.triplewise):
        parameters = inspect.signature(function).parameters
        assert parameters["block_size"].default == config["block_size"] == "auto"
        assert parameters["seed"].default == config["seed"]
        assert parameters["backend"].default == config["backend"]
    assert genotile.api.DENSE_MAX == config["dense_max"]
    from genotile.store import stage
    from genotile.triples import stage as triples_stage

    seen = []
    resolve = stage.resolve_auto_block_size
    monkeypatch.setattr(stage, "resolve_auto_block_size", lambda *a, **k: seen.append((a, k)) or resolve(*a, **k))
    genotile.pairwise(g, "king", backend="numpy")
    (_, metrics, backend, dense_max), _ = seen[0]
    assert (metrics, backend, dense_max) == (["king"], "numpy", config["dense_max"])
    plans = []
    plan_triples = triples_stage.plan_triples
    monkeypatch.setattr(triples_stage, "plan_triples", lambda *a, **k: plans.append(a) or plan_triples(*a, **k))
    genotile.triplewise(g[:, :5], backend="numpy")
    assert plans[0][1] == settings.ccc3_plan_settings(config)[0] == ccc3.CPU_BLOCK_SIZE


def test_reader_options_are_refused_for_arrays_alike_by_both_functions(g):
    for call in (genotile.pairwise, genotile.triplewise):
        with pytest.raises(GenotileError, match=r"^option\(s\) regions, samples apply to a VCF/BCF"):
            call(g, samples=["a"], regions="1")


def test_a_list_of_paths_is_one_input_in_its_order(tmp_path):
    """pairwise of a list of pathlib.Path files (store/listed.py): the pairs of the files joined
    into one, alignments and genotypes; ids refused (files name their vectors), and against."""
    from genodata import vcf_text, write_vcf
    from snakerun import random_alignment, write_fasta

    seqs = random_alignment(np.random.default_rng(2), 30, 80)
    names = [f"x{i}" for i in range(30)]
    write_fasta(tmp_path / "a.fa", seqs[:20], names[:20])
    write_fasta(tmp_path / "b.fa", seqs[20:], names[20:])
    write_fasta(tmp_path / "ab.fa", seqs, names)
    listed = genotile.pairwise([tmp_path / "a.fa", tmp_path / "b.fa"], "snp", threshold=30)
    joined = genotile.pairwise(str(tmp_path / "ab.fa"), "snp", threshold=30)
    assert len(listed.pairs) > 0 and listed.pairs.equals(joined.pairs)
    g = random_genotypes(24, 50, seed=6)
    samples, variants = [f"p{i}" for i in range(24)], [f"v{i}" for i in range(50)]
    write_vcf(tmp_path / "a.vcf", vcf_text(g[:15], samples[:15], variants))
    write_vcf(tmp_path / "b.vcf", vcf_text(g[15:], samples[15:], variants))
    write_vcf(tmp_path / "ab.vcf", vcf_text(g, samples, variants))
    listed = genotile.pairwise([tmp_path / "a.vcf", tmp_path / "b.vcf"], "king")
    joined = genotile.pairwise(str(tmp_path / "ab.vcf"), "king")
    assert len(listed.pairs) == 24 * 23 // 2 and listed.pairs.equals(joined.pairs)
    with pytest.raises(GenotileError, match="ids, rows: files name"):
        genotile.pairwise([tmp_path / "a.fa", tmp_path / "b.fa"], "snp", ids=names)
    with pytest.raises(GenotileError, match="x: a list of str is an alignment's sequences, but these name files"):
        genotile.pairwise([str(tmp_path / "a.fa"), str(tmp_path / "b.fa")], "snp")
    with pytest.raises(GenotileError, match="against: input .* is a VCF/BCF, but .* of the same list is a FASTA"):
        genotile.pairwise(str(tmp_path / "ab.fa"), "snp", against=[tmp_path / "a.fa", tmp_path / "a.vcf"])
    with pytest.raises(GenotileError, match="against: a list of str is an alignment's sequences"):
        genotile.pairwise(str(tmp_path / "ab.fa"), "snp", against=[str(tmp_path / "a.fa"), str(tmp_path / "b.fa")])
