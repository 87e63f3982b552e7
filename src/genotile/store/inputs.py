"""What a dataset's input is, by its name, and whether its metrics can read it.

Checked before any job runs (rules/common.smk, `genotile run`, the Python API), so that a PLINK
fileset given to `snp`, or a .bim named instead of its .bed, is one clear line and not a failed
store job. The kinds, their names and what they feed are the readers' (io/readers/base.py
READERS): "fasta" (.fa .fasta .fas .fna .aln, optionally .gz), "vcf" (.vcf, .vcf.gz, .vcf.bgz,
.bcf), "plink1" (.bed), "plink2" (.pgen), "vcz" (a VCF-Zarr directory); any other name is not
judged here (the metric's reader decides, as before).

An input may be a list of files (store/listed.py): each is checked as one, and together they must
hold one source (alignments, or genotypes: a VCF beside a PLINK fileset is genotypes too), each
file once; so must a query's FILE (`against:`) given as a list.
"""

import os
from pathlib import Path

from genotile.core.encodings import ENCODINGS
from genotile.errors import GenotileError
from genotile.io.readers.base import GENOTYPE_OPTIONS, list_label, reader_classes, reader_for


def files_of(path) -> list[str]:
    """A dataset's input (a path, or a list of paths: store/listed.py) as the list of its files.

    >>> files_of("a.fa"), files_of(["a.fa", "b.fa"])
    (['a.fa'], ['a.fa', 'b.fa'])
    """
    return [os.fspath(path)] if isinstance(path, (str, os.PathLike)) else [os.fspath(p) for p in path]


def refuse_missing(path) -> None:
    """A GenotileError naming the first file of a dataset's input (a path, or a list of paths)
    that is not there, and the list it is in: before anything sizes, hashes or reads them (an
    earlier store's append and reuse checks come first).

    >>> refuse_missing(__file__)
    >>> refuse_missing([__file__, "no/such.fa"])
    Traceback (most recent call last):
    genotile.errors.GenotileError: no/such.fa: no such file (listed in ...)
    """
    files = files_of(path)
    missing = [p for p in files if not os.path.exists(p)]
    if missing:
        where = f" (listed in {list_label(files)})" if len(files) > 1 else ""
        raise GenotileError(f"{missing[0]}: no such file{where}")


def given(path) -> "str | list[str]":
    """A dataset's input as the store takes it: one file as its path (a one-file list too), two or
    more as their list (store/listed.py).

    >>> given(["a.fa"]), given(["a.fa", "b.fa"])
    ('a.fa', ['a.fa', 'b.fa'])
    """
    files = files_of(path)
    return files[0] if len(files) == 1 else files


def input_files(path) -> list[Path]:
    """Every file (or directory) the input is read from: the three of a PLINK fileset, else the input itself."""
    reader = reader_for(path)
    return [Path(path)] if reader is None else reader.input_files(path)


def inputs_of(source: str) -> str:
    """The inputs that hold `source` ("alignment", "genotypes"), in words, from the readers:
    "a VCF/BCF, a PLINK fileset or a VCF-Zarr store"."""
    names = list(dict.fromkeys(r.what for r in reader_classes() if r.source == source))
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def metric_encoding(metric: str) -> str:
    """The store encoding a metric (2-way or 3-way) reads, refused by name when unknown."""
    from genotile.core.registry import REGISTRY

    if metric not in REGISTRY:
        raise GenotileError(f"unknown metric {metric!r}")
    return REGISTRY[metric].encoding


def check_input(path, metrics, options: dict | None = None, where: str = "") -> str | None:
    """Refuse metrics (and genotype options) that the input's kind cannot feed; return the kind.

    `path`: a file, or a list of files (store/listed.py), each checked, of one source (its first
    file's kind returned). `where` prefixes the message (e.g. "dataset x: "); options with a None
    value count as not given.
    """
    files = files_of(path)
    if len(files) > 1:
        check_one_source(files, where)
        if (options or {}).get("samples") is not None:
            raise GenotileError(
                f"{where}samples: selects and orders the samples of one file; the files of a list input hold "
                f"distinct samples ({list_label(files)}): select them in each file (bcftools view -S), or join "
                "the files first"
            )
    kinds = [_check_file(f, metrics, options, where) for f in files]
    return kinds[0]


def check_one_source(files: list[str], where: str = "") -> None:
    """Refuse a list input whose files are not all alignments or all genotypes, or that names a
    file twice (its vectors would be read twice), naming the file."""
    seen: dict[str, str] = {}
    for f in files:
        key = os.path.normpath(os.path.abspath(f))
        if key in seen:
            raise GenotileError(f"{where}input {f} is listed twice (as {seen[key]}): list each file once")
        seen[key] = f
    try:
        readers = [reader_for(f) for f in files]
    except GenotileError:  # a PLINK companion file named: check_input's _check_file names it
        return
    first = next((r for r in readers if r is not None), None)
    for f, reader in zip(files, readers, strict=True):
        if first is not None and reader is not None and reader.source != first.source:
            head = files[readers.index(first)]
            raise GenotileError(
                f"{where}input {f} is {reader.what}, but {head} of the same list is {first.what}: a list input "
                f"is files of one kind (alignments: {inputs_of('alignment')}; or genotypes: "
                f"{inputs_of('genotypes')})"
            )


def _check_file(path, metrics, options: dict | None, where: str) -> str | None:
    """check_input of one file."""
    try:
        reader = reader_for(path)
    except GenotileError as exc:  # a PLINK companion file named
        raise GenotileError(f"{where}{exc}") from None
    given = sorted(k for k, v in (options or {}).items() if v is not None)
    if reader is None:
        return None
    wrong = [m for m in metrics if metric_encoding(m) not in reader.encodings()]
    if wrong:
        needs = ENCODINGS[metric_encoding(wrong[0])].source
        inputs = inputs_of(needs)
        needs = inputs if needs == "alignment" else f"genotypes ({inputs})"
        raise GenotileError(f"{where}input {path} is {reader.what}, but metric(s) {', '.join(wrong)} need {needs}")
    if given and not reader.options:
        raise GenotileError(
            f"{where}option(s) {', '.join(given)} apply to genotype input ({inputs_of('genotypes')}), "
            f"not to the alignment {path}"
        )
    return reader.kind_of(path)


def check_against(path, against, metrics, options: dict | None = None, where: str = "") -> None:
    """Query mode (`against:`, issue 27): FILE of the input's kind, read by the same metrics;
    2-way metrics only (ccc3 compares triples within one set). FILE, as the input, may be a list
    of files of one kind, checked as a list input is (`check_input`: one source, each file once),
    read as one (store/query.read_side)."""
    from genotile.core.metrics import METRICS  # the 2-way metrics

    files = files_of(path)
    three = [m for m in metrics if m not in METRICS]
    if three:
        raise GenotileError(
            f"{where}against: is for 2-way metrics (a query compares the input's vectors with the FILE's); "
            f"{', '.join(three)} compares triples within one set: run it on a dataset of its own"
        )
    listed = files_of(against)
    if len(listed) > 1:
        check_one_source(listed, f"{where}against: ")
    try:
        kind = next((r for r in (reader_for(f) for f in files) if r is not None), None)
        other = next((r for r in (reader_for(f) for f in listed) if r is not None), None)
    except GenotileError as exc:
        raise GenotileError(f"{where}against: {exc}") from None
    if kind is not None and other is not None and kind.source != other.source:
        raise GenotileError(
            f"{where}against: {list_label(listed)} is {other.what}, but the input {list_label(files)} is "
            f"{kind.what}: a query compares vectors of one kind (alignments, or genotypes)"
        )
    check_input(against, metrics, options, where=f"{where}against: ")


def check_datasets(config: dict) -> None:
    """check_input over every dataset of a (validated) config, and its `against:` FILE."""
    for name, spec in config["datasets"].items():
        options = {k: spec.get(k) for k in GENOTYPE_OPTIONS}
        if spec.get("multiallelic") == "skip":  # the schema's default, filled in for every dataset
            options.pop("multiallelic")
        if spec.get("filter_pass") is False:
            options.pop("filter_pass")
        check_input(spec["input"], spec["metrics"], options, where=f"dataset {name}: ")
        if spec.get("against") is not None:
            check_against(spec["input"], spec["against"], spec["metrics"], options, where=f"dataset {name}: ")


def known_vectors(path, metric: str, options: dict | None = None, fingerprint=None) -> int | None:
    """The vectors a store of `metric`'s encoding holds from the input `path` (its plan's
    `input_vectors`, identical vectors collapsed or not), where they are known before the store
    is made; else None, and the store tells.

    A list input (store/listed.py): the sum of its files' (`fingerprint` then a list, one per
    file), None where any file's is not known or a `samples:` list picks among the files' samples
    (the store tells which it keeps).

    Known: a FASTA's records (one pass over it, kept in the dataset's `fingerprint` while the
    file is unchanged: sources.recorded_count), the samples of a VCF/BCF header or of a PLINK
    fileset's .fam / .psam, or those of the `samples:` list where it names samples of the file
    only, or of a VCF-Zarr store's sample_id array. Not: vectors that are variants (the readers'
    rules keep or drop them), an input that cannot be read as its kind (its reader refuses it by
    name).
    """
    files = files_of(path)
    if len(files) == 1:
        one = fingerprint[0] if isinstance(fingerprint, (list, tuple)) else fingerprint
        return _known_vectors(files[0], metric, options, one)
    if (options or {}).get("samples") is not None:
        return None
    prints = list(fingerprint) if isinstance(fingerprint, (list, tuple)) else [None] * len(files)
    counts = [_known_vectors(f, metric, options, fp) for f, fp in zip(files, prints, strict=True)]
    return None if None in counts else sum(c for c in counts if c is not None)


def _known_vectors(path, metric: str, options: dict | None, fingerprint) -> int | None:
    """known_vectors of one file."""
    try:
        reader = reader_for(path)
    except GenotileError:
        return None
    if reader is None or ENCODINGS[metric_encoding(metric)].transposed:
        return None
    kind = reader.kind_of(path)
    try:
        if reader.source == "alignment":
            from genotile.io.fasta import count_records
            from genotile.store.sources import recorded_count

            return count_records(path) if fingerprint is None else recorded_count(fingerprint, path, count_records)
        samples = _file_samples(kind, path)
        wanted = (options or {}).get("samples")
        if samples is None or wanted is None:
            return None if samples is None else len(samples)
        from genotile.io.readers.vcf import read_sample_list

        listed = read_sample_list(wanted) or []
        return len(listed) if set(listed) <= set(samples) else None
    except (OSError, ValueError, GenotileError):
        return None


def _file_samples(kind: str | None, path) -> list[str] | None:
    """The sample IDs of a genotype input as its reader names them, read without its genotypes
    (the VCF's header, the fileset's sample table); None where that is not done."""
    if kind == "vcf":
        from genotile.io.readers.vcf import header_samples

        return header_samples(path) or None
    if kind in ("plink1", "plink2"):
        from genotile.io.readers.plink_tables import read_samples

        return read_samples(input_files(path)[2]).ids
    if kind == "vcz":
        from genotile.io.readers.vcz import sample_ids

        return sample_ids(path)
    return None


def refuse_dense_formats(name: str, spec: dict, dense_max: int, fingerprint=None, against_fingerprint=None) -> None:
    """Refuse a dataset's formats holding every pair (io/peer_formats.py) past `dense_max`, before
    any job, where its input's vectors are known before its store (`known_vectors`; in query mode
    the input's and the FILE's, `against:`, which its plan counts together); the others are
    refused once the store's plan is made (rules/common.smk peer_files, with the same line).
    `fingerprint`: the input's (store/sources.py write_fingerprint), or a list input's, one a file."""
    from genotile.io import peer_formats

    options = {k: spec[k] for k in GENOTYPE_OPTIONS if k in spec}
    for metric in spec["metrics"]:
        if peer_formats.output_files(spec, metric)[1]:
            n = known_vectors(spec["input"], metric, options, fingerprint)
            if n is not None and spec.get("against") is not None:
                r = known_vectors(spec["against"], metric, options, against_fingerprint)
                n = None if r is None else n + r
            if n is not None:
                peer_formats.refuse_past_dense_max(name, spec, metric, n, dense_max)
