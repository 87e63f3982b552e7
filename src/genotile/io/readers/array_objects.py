"""Other libraries' genotype and alignment objects as the Python API's arrays, in its orientation.

The API (api.py) reads a genotype array as **rows = samples, columns = variants**. scikit-allel
and sgkit hold genotypes the other way round: **variants first** (allel's `GenotypeArray` is
(variants, samples, ploidy), its `to_n_alt()` (variants, samples); sgkit's `call_genotype` has
dims (variants, samples, ploidy)). Passing one of those as if it were samples x variants would
silently compare variants, so each is recognised here and turned into (samples, variants) ALT
counts, with the sample (and variant) names it carries:

- scikit-allel's `GenotypeArray` (also its chunked and dask forms): diploid allele calls,
  variants first; the calls its `mask` hides are missing, as allel's own `to_n_alt` reads them;
- scikit-allel's `HaplotypeArray` (variants, haplotypes): each haplotype a vector of 0/1 ALT
  counts;
- an sgkit (xarray) Dataset: its `call_genotype`, ordered by its dims' names, the samples named
  by `sample_id` and the variants by `variant_id` where it has one;
- an xarray DataArray with dims "samples" and "variants" (ALT counts) or also "ploidy" (calls);
- a pandas DataFrame: rows as the API's (`rows=`), its index naming the rows, its columns the
  columns.

Allele calls follow the VCF reader's rules (io/readers/vcf.py `DiploidCalls`): -1 is a missing
allele and a call with one missing allele is missing; -2 (no allele) only pads a missing
haploid call; a called haploid or polyploid call is refused. An allele index above 1 is refused:
genotile's genotypes count one ALT allele, and where a VCF reader skips or splits a
multi-allelic record, an array has no record to skip -- keep the biallelic variants first.

Nothing here imports allel, sgkit, xarray or pandas: each is recognised by its type's module
and name or by its attributes, so none is a dependency of genotile.
"""

import numpy as np

from genotile.errors import GenotileError
from genotile.io.readers.vcf import MISSING_ALLELE, NO_ALLELE

ROWS = ("samples", "variants")
MULTIALLELIC_HINT = (
    "genotypes count one ALT allele: keep the biallelic variants first "
    "(scikit-allel: g.compress(g.count_alleles().is_biallelic_01()))"
)


def _library(x) -> str:
    """The top-level package of x's type ("allel", "pandas", "xarray", "numpy", ...)."""
    return type(x).__module__.partition(".")[0]


def _allel_kind(x) -> str | None:
    """ "genotypes" or "haplotypes" for scikit-allel's GenotypeArray / HaplotypeArray (and their
    chunked and dask forms), else None."""
    if _library(x) != "allel":
        return None
    name = type(x).__name__
    if name.startswith("Genotype") and not name.startswith("GenotypeAlleleCount"):
        return "genotypes"
    if name.startswith("Haplotype"):
        return "haplotypes"
    return None


def _is_dataset(x) -> bool:
    """An xarray Dataset (sgkit's datasets are): data variables looked up by name."""
    return hasattr(x, "data_vars") and hasattr(x, "dims")


def _is_data_array(x) -> bool:
    """An xarray DataArray: named dims and values, not a numpy array."""
    return not isinstance(x, np.ndarray) and hasattr(x, "dims") and hasattr(x, "values") and not _is_dataset(x)


def _is_pandas(x, kind: str) -> bool:
    """A pandas DataFrame (`kind` "DataFrame") or Series ("Series")."""
    return _library(x) == "pandas" and hasattr(x, "index") and type(x).__name__ == kind


def describe(x) -> str | None:
    """Words for a genotype object of another library (for errors), or None where x is not one.

    >>> describe([[0, 1], [1, 2]]) is None
    True
    """
    kind = _allel_kind(x)
    if kind is not None:
        return f"scikit-allel's {type(x).__name__}"
    if _is_dataset(x):
        return "an xarray Dataset (sgkit)"
    if _is_data_array(x) and {"samples", "variants"} <= set(x.dims):
        return f"an xarray DataArray with dims {tuple(x.dims)}"
    return None


def check_rows(rows) -> None:
    """`rows` is None, "samples" or "variants"."""
    if rows is not None and rows not in ROWS:
        raise GenotileError(
            f"rows must be 'samples' (rows are samples, columns variants: the default) or 'variants' "
            f"(rows are variants, as scikit-allel's to_n_alt() and sgkit give them), not {rows!r}"
        )


def genotypes_of(x, rows=None) -> tuple[object, list | None, list | None]:
    """A genotype input as (samples, variants) ALT counts, with the names it carries.

    Parameters
    ----------
    x : array_like, pandas.DataFrame, scikit-allel GenotypeArray / HaplotypeArray or xarray object
        Genotypes (see the module docstring for each kind and its orientation).
    rows : {"samples", "variants"}, optional
        What the rows of a plain array or DataFrame hold; default "samples". An allel or sgkit
        object is read in its own orientation (variants first): rows, if given, must say so.

    Returns
    -------
    genotypes : array_like, shape (samples, variants)
        ALT counts, a missing call negative or NaN (checked later by array.genotype_codes).
    samples, variants : list of str or None
        The names the object carries (None: none).

    Examples
    --------
    >>> g, samples, variants = genotypes_of(np.array([[0, 1, 2], [2, 1, 0]]), rows="variants")
    >>> g.tolist(), samples, variants
    ([[0, 2], [1, 1], [2, 0]], None, None)
    """
    check_rows(rows)
    what = describe(x)
    if what is not None:
        if rows == "samples":
            raise GenotileError(
                f"rows='samples', but {what} holds variants first (variants, samples): leave rows out, "
                "and it is read in its own orientation"
            )
        if _allel_kind(x) == "haplotypes":
            return _haplotype_counts(np.asarray(x), what).T, None, None
        if _allel_kind(x) == "genotypes":
            mask = getattr(x, "mask", None)
            return alt_counts(np.asarray(x), what, mask=mask).T, None, None
        if _is_dataset(x):
            return _dataset_counts(x, what)
        return _data_array_counts(x, what), None, None
    if _is_pandas(x, "DataFrame"):
        values = x.to_numpy()
        if values.dtype == object:  # nullable integers (pd.NA) and mixed columns: as floats, NA as NaN
            try:
                values = x.to_numpy(dtype="float64", na_value=np.nan)
            except (TypeError, ValueError):
                pass  # text: refused as such by genotype_codes
        index, columns = [str(i) for i in x.index], [str(c) for c in x.columns]
        if rows == "variants":
            return values.T, columns, index
        return values, index, columns
    if rows == "variants":
        g = np.asarray(x)
        return (g.T if g.ndim == 2 else g), None, None
    return x, None, None


def alignment_of(x) -> tuple[object, list | None]:
    """An alignment input as the API reads it, with the sequence names it carries.

    A pandas Series of sequences or a DataFrame of one-character cells (rows the sequences):
    their values, the index naming them. A genotype object of another library is refused,
    naming it (genotypes are for ibs, king, ccc2 and ccc3).

    >>> alignment_of(["ACGT", "ACGA"])
    (['ACGT', 'ACGA'], None)
    """
    what = describe(x)
    if what is not None:
        raise GenotileError(
            f"the alignment is {what}: genotypes, read by ibs, king, ccc2 and ccc3, not sequences; "
            "snp and hamming read sequences (str or bytes of one length, or an (n, length) array of characters)"
        )
    if _is_pandas(x, "Series"):
        return list(x.to_numpy()), [str(i) for i in x.index]
    if _is_pandas(x, "DataFrame"):
        values = x.to_numpy()
        if values.dtype == object:
            values = values.astype(str)  # one-character cells as text; numbers stay numbers (refused as genotypes)
        return values, [str(i) for i in x.index]
    return x, None


def alt_counts(calls: np.ndarray, what: str, mask=None, samples=None) -> np.ndarray:
    """Diploid allele calls (variants, samples, 2) as ALT counts (variants, samples), -1 missing.

    Parameters
    ----------
    calls : numpy.ndarray of int, shape (variants, samples, ploidy)
        Allele indices: 0 REF, 1 ALT, -1 a missing allele, -2 no allele (padding).
    what : str
        The object in words, for errors.
    mask : array_like of bool, shape (variants, samples), optional
        Calls to read as missing (scikit-allel's GenotypeArray.mask).
    samples : list of str, optional
        Sample names, for errors.

    Returns
    -------
    numpy.ndarray of int16, shape (variants, samples)

    Examples
    --------
    >>> alt_counts(np.array([[[0, 0], [0, 1], [1, 1], [-1, 1]]]), "g").tolist()
    [[0, 1, 2, -1]]
    >>> alt_counts(np.array([[[0, 2]]]), "g")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    genotile.errors.GenotileError: g: variant 0, sample 0: allele index 2: a multi-allelic variant; ...
    """
    if calls.ndim != 3:
        raise GenotileError(f"{what} has shape {calls.shape}: allele calls are (variants, samples, ploidy)")
    if calls.dtype.kind not in "iu":
        raise GenotileError(f"{what} holds {calls.dtype}, not allele indices (integers)")
    if 0 in calls.shape[:2]:
        empty = "variants" if calls.shape[0] == 0 else "samples"
        raise GenotileError(f"{what}, shape {calls.shape}, has no {empty}: nothing to compare")
    if calls.shape[2] != 2:
        raise GenotileError(
            f"{what} has ploidy {calls.shape[2]}: only diploid calls are supported (as from a VCF); "
            "haploid data: pass ALT counts 0/1 (or scikit-allel's HaplotypeArray)"
        )
    a0, a1 = calls[..., 0].astype(np.int16), calls[..., 1].astype(np.int16)

    def fail(bad: np.ndarray, problem) -> None:
        if bad.any():
            v, s = (int(k) for k in np.argwhere(bad)[0])
            sample = repr(samples[s]) if samples is not None else s
            raise GenotileError(f"{what}: variant {v}, sample {sample}: {problem(a0[v, s], a1[v, s])}")

    fail(
        np.minimum(a0, a1) < NO_ALLELE,
        lambda x, y: f"allele index {min(x, y)}: not an allele, -1 (missing) or -2 (none)",
    )
    fail(
        (a1 == NO_ALLELE) & (a0 != MISSING_ALLELE),
        lambda x, y: f"haploid call (allele {x}); only diploid calls are supported",
    )
    fail(np.maximum(a0, a1) > 1, lambda x, y: f"allele index {max(x, y)}: a multi-allelic variant; {MULTIALLELIC_HINT}")
    missing = (a0 < 0) | (a1 < 0)  # a half-missing call (./1) is missing, as the VCF reader reads it
    if mask is not None:
        missing |= np.asarray(mask, dtype=bool)
    counts = a0 + a1
    counts[missing] = -1
    return counts


def _haplotype_counts(h: np.ndarray, what: str) -> np.ndarray:
    """Haplotypes (variants, haplotypes) of allele indices as 0/1 ALT counts, -1 missing."""
    if h.ndim != 2:
        raise GenotileError(f"{what} has shape {h.shape}: haplotypes are (variants, haplotypes)")
    if 0 in h.shape:
        empty = "variants" if h.shape[0] == 0 else "haplotypes"
        raise GenotileError(f"{what}, shape {h.shape}, has no {empty}: nothing to compare")
    bad = (h > 1) | (h < MISSING_ALLELE)
    if bad.any():
        v, k = (int(i) for i in np.argwhere(bad)[0])
        value = int(h[v, k])
        problem = f"a multi-allelic variant; {MULTIALLELIC_HINT}" if value > 1 else "not an allele or -1 (missing)"
        raise GenotileError(f"{what}: variant {v}, haplotype {k}: allele index {value}: {problem}")
    return h.astype(np.int16)


def _ordered(array, wanted: tuple, what: str) -> np.ndarray:
    """An xarray variable's values with its axes in the order of `wanted` dim names."""
    names = tuple(str(d) for d in array.dims)
    if set(names) != set(wanted):
        raise GenotileError(f"{what} has dims {names}: expected {', '.join(wanted)}")
    return np.transpose(np.asarray(array.values), [names.index(d) for d in wanted])


def _dataset_counts(ds, what: str) -> tuple[np.ndarray, list | None, list | None]:
    """An sgkit Dataset's call_genotype as (samples, variants) ALT counts, and its names."""
    if "call_genotype" not in ds:
        raise GenotileError(
            f"{what} has no call_genotype variable: genotypes are read from sgkit's call_genotype "
            "(dims variants, samples, ploidy)"
        )
    samples = [str(s) for s in np.asarray(ds["sample_id"].values)] if "sample_id" in ds else None
    where = f"{what}: call_genotype"
    calls = _ordered(ds["call_genotype"], ("variants", "samples", "ploidy"), where)
    counts = alt_counts(calls, where, samples=samples)
    variants = None
    if "variant_id" in ds:  # named where every variant has an ID ('.' is none: then by index)
        ids = [str(v) for v in np.asarray(ds["variant_id"].values)]
        variants = ids if all(i not in ("", ".") for i in ids) else None
    return counts.T, samples, variants


def _data_array_counts(da, what: str) -> np.ndarray:
    """An xarray DataArray of ALT counts (samples, variants) or calls (+ ploidy), ordered by dims."""
    if "ploidy" in da.dims:
        calls = _ordered(da, ("variants", "samples", "ploidy"), what)
        return alt_counts(calls, what).T
    return _ordered(da, ("samples", "variants"), what)
