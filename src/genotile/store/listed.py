"""A dataset's input given as a list of files of one kind (issue 27, point 1): the vectors of the
first file, then the second's, and so on, as one input.

A list of FASTA alignments of one length is one alignment of their records in order; a list of
genotype inputs (VCF/BCF, PLINK filesets, VCF-Zarr) holding the same variants in the same order
(their IDs, after the reader options: checked, one line naming the file that differs) is one input
of their samples in order. A one-file list is that file.

The store of a list (`store`, what the store job and `genotile run` run for one, in place of
store/append.store) is made in full from the files read as one (`read_list`, `fresh`). Its
append record names each file by its path, size, content digest and SHA-256, and keeps what each
was read with (store/sources.py: its companions and option files). When the list is the earlier
one with further files added at its end, every earlier file unchanged (its digest: the
workflow's fingerprint, else hashed; its companions and option files too), only the further
files are read and the store grown by their vectors, as a FASTA's appended records grow it
(store/append.grow): an alignment's records counted with the earlier column counts
(store/extend.py: the same store where the encoding holds), a genotype list's samples checked for
the recorded variants (their IDs' digest) and packed alone (a sample's planes are its own
calls'). Where that cannot give the store (a column the new records make variable, a sample
missing a call where no earlier one did, an earlier store of one genotype file, which records no
variant IDs) the whole list is read again, its store still planned as appended
(store/append.regrow). The earlier tiles are kept; the new vectors' pairs are computed. Anything
else (an earlier file changed, removed or moved, other settings, a genotype list under ccc2,
whose vectors are the variants) is made in full, one line saying why. An input that was one
file and becomes a list starting with it is appended to the same way.

A query's input or FILE (`against:`) may be a list too: read as one (`read_listed`), its files
recorded in the query store's manifest (`side_sources`) and compared with the files as they are
now (`side_differences`, `earlier_changed`: store/query_append.py grows a FILE list by its
further files).

A genotype list's reader counts (`listed_counts`) are the first file's per-variant ones and its
calls' counts added over the files; the per-variant counts over every sample (monomorphic,
all missing) are left out.
"""

import logging
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genotile.core.encodings import ENCODINGS
from genotile.core.genotype import GenotypeLayout, genotype_layout, genotype_planes
from genotile.io.readers.base import list_label
from genotile.io.readers.listed import ListedAlignment, ListedGenotypes, listed_sha256
from genotile.io.readers.query import Part
from genotile.store import append, extend, stage
from genotile.store.inputs import files_of, refuse_missing
from genotile.store.sources import (
    content_sha256,
    content_size,
    differences,
    known_digest,
    sources,
    stat_of_read,
)
from genotile.util.atomic import write_record

log = logging.getLogger("genotile")

SUMMED = ("missing_calls", "half_missing_calls")  # a list's counts: per call, added over its files
# per variant over every sample: not the files' to add, left out of a list's counts
UNSUMMED = ("monomorphic", "all_missing")


def listed_counts(stats: list[dict]) -> dict:
    """A genotype list's reader counts: the first file's counts of records and variants (the files
    hold the same), its calls' counts added over the files (`SUMMED`), without the counts over
    every sample one file cannot give (`UNSUMMED`).

    >>> listed_counts([{"variants": 5, "missing_calls": 2, "monomorphic": 1}, {"variants": 5, "missing_calls": 3}])
    {'variants': 5, 'missing_calls': 5}
    """
    out = {k: v for k, v in stats[0].items() if k not in UNSUMMED}
    for more in stats[1:]:
        for key in SUMMED:
            if key in out or key in more:
                out[key] = out.get(key, 0) + more.get(key, 0)
    return out


def variants_sha256(variants: list[str]) -> str:
    """The digest of a genotype list's variant IDs, in order: what a further file is checked with."""
    return append.ids_digest(variants)


def _genotype_part(path, encoding: str, options: dict | None) -> tuple[Part, dict, dict]:
    """One genotype file of a list: (its samples' part, codes (samples, variants) and the variant
    IDs as fields, whatever the encoding; its reader's counts; its manifest keys)."""
    from genotile.store.parts import read_part

    keys: dict = {}
    part, stats = read_part(path, encoding, options, keys)
    if ENCODINGS[encoding].transposed:  # read_part names the variants the vectors there
        part = Part(part.name, part.sha256, list(part.fields or []), part.data, part.ids)
    return part, stats, keys


def _held(paths: list[str], encoding: str, canonical: bool) -> ListedAlignment | None:
    """Regular FASTA files of one length held as one (io/readers/fasta.py hold_regulars, on
    threads, their SHA-256s alongside); None where they are not (then `read_list` reads each)."""
    from genotile.core.encode import ALPHABETS
    from genotile.io.readers.fasta import hold_regulars
    from genotile.store.parts import regular_layouts

    found = regular_layouts(paths, encoding)
    if found is None:
        return None
    with ThreadPoolExecutor(min(4, len(paths)), thread_name_prefix="genotile-sha256") as hashing:
        sha256 = [hashing.submit(content_sha256, p) for p in paths]
        held = hold_regulars(found, ALPHABETS[encoding], canonical)
        digests = [f.result() for f in sha256]
    if held is None:
        return None
    parts, first = [], 0
    for p, layout, digest in zip(paths, found, digests, strict=True):
        parts.append(Part(p, digest, layout.ids, held.rows[first : first + layout.n]))
        first += layout.n
    return ListedAlignment(parts, held)


def read_list(paths: list[str], encoding: str, options: dict | None = None, canonical: bool = False, hold: bool = True):
    """The files of a list input read as one input in memory (io/readers/listed.py).

    Parameters
    ----------
    paths : list of str
        Two or more files of one kind.
    encoding : str
        The store's encoding.
    options : dict, optional
        The genotype readers' options, applied to each file.
    canonical : bool
        Identical vectors will be collapsed (an alignment's bytes held canonical).
    hold : bool
        FASTA files held as one, folded (the store job's ingest takes them held); False: their
        bytes as they are, encoded as an array's (the API's in-memory store).

    Returns
    -------
    ListedAlignment or ListedGenotypes
    """
    from genotile.store.parts import read_part

    refuse_missing(paths)
    if ENCODINGS[encoding].source == "alignment":
        held = _held(paths, encoding, canonical) if hold else None
        if held is not None:
            return held
        return ListedAlignment([read_part(p, encoding)[0] for p in paths])
    read = [_genotype_part(p, encoding, options) for p in paths]
    return ListedGenotypes([r[0] for r in read], listed_counts([r[1] for r in read]), [r[2] for r in read])


def read_listed(paths: list[str], encoding: str, options: dict | None = None) -> tuple[Part, dict]:
    """A query's side given as a list of files (store/query.read_side), read as one (`read_list`,
    not held): its files joined in words (io/readers/base.list_label), its SHA-256 of theirs
    (io/readers/listed.listed_sha256), each file's kept (Part.sha256s); and its reader counts."""
    reader = read_list(paths, encoding, options, hold=False)
    name, sha256, sha256s = str(reader), reader.sha256(), list(reader.sha256s)
    if isinstance(reader, ListedAlignment):
        return Part(name, sha256, list(reader.ids), reader.rows, sha256s=sha256s), {}
    if ENCODINGS[encoding].transposed:  # variants are the vectors (ccc2), over the files' samples
        return Part(name, sha256, reader.variants, reader.codes, reader.samples, sha256s=sha256s), reader.stats
    return Part(name, sha256, reader.samples, reader.codes, reader.variants, sha256s=sha256s), reader.stats


def side_sources(path, part: Part, options: dict | None, digest=None) -> dict:
    """store/sources.sources of one side of a query: of its file, or of each file of a list
    ({"listed": [...]}, as a list input's: store/listed.complete); `digest`: the file's content
    digest, or a list's, one a file, where known."""
    files = files_of(path)
    if len(files) == 1:
        return sources(files[0], options, input_sha256=part.sha256, input_digest=digest)
    digests = digest if isinstance(digest, list) else [None] * len(files)
    return listed_sources(files, part.sha256s or [None] * len(files), digests, options)


def listed_sources(paths: list[str], sha256s: list, digests: list, options: dict | None) -> dict:
    """The `sources` of a list of files ({"listed": each file's store/sources.sources}), given
    each one's SHA-256 and content digest where known (None: hashed or taken from its
    fingerprint): a list input's (`complete`), a query's side (`side_sources`)."""
    each = zip(paths, sha256s, digests, strict=True)
    return {"listed": [sources(p, options, input_sha256=s, input_digest=d) for p, s, d in each]}


def side_differences(recorded, path, options: dict | None) -> list[str]:
    """store/sources.differences of one side of a query as it is now (a file, or a list of files)
    and as `side_sources` recorded it; [] where they agree."""
    files = files_of(path)
    listed = recorded.get("listed") if isinstance(recorded, dict) else None
    if listed is None and len(files) == 1:
        return differences(recorded, sources(files[0], options))
    if not isinstance(listed, list) or len(listed) != len(files):  # a list for one file, one for a list
        return [f"the list of files ({list_label(files)})"]
    return [d for r, f in zip(listed, files, strict=True) for d in differences(r, sources(f, options))]


def complete(m: dict, paths: list[str], sha256s: list[str], digests: list[str], options, variants=None) -> None:
    """A list input's ingest manifest given what it was made from: `sources` (each file's, for
    reruns, and the append record's `files`: store/append.py), the reader options, a genotype
    list's variants' digest (`variants`: their IDs)."""
    m["sources"] = listed_sources(paths, sha256s, digests, options)
    if "encoding" in m:  # a genotype list's manifest (an alignment's names its alphabet)
        given = {k: v for k, v in (options or {}).items() if v is not None}
        m["options"] = {k: (str(v) if isinstance(v, os.PathLike) else v) for k, v in given.items()}
        if variants is not None:
            m["variants_sha256"] = variants_sha256(variants)


# --- the store of a list: a further file's vectors appended, else made in full ----------------


@dataclass(frozen=True)
class NewSamples:
    """A genotype list's further files' samples, read alone (`_grown_genotypes`): what
    store/append.grow packs after the earlier rows, as extend.Appended is for new records."""

    ids: list[str]
    codes: np.ndarray  # (samples, variants) uint8
    layout: GenotypeLayout  # the earlier store's
    columns = None  # no counts: a genotype store's rows do not depend on one another
    earlier_enc = None  # the earlier rows' planes are kept as they are

    def planes(self, rows: np.ndarray) -> np.ndarray:
        return genotype_planes(self.codes[rows], self.layout)

    def distinct(self) -> tuple[np.ndarray, np.ndarray]:
        from genotile.store.duplicates import distinct_rows

        return distinct_rows(self.codes)


def _total_size(paths: list[str]) -> int:
    return sum(content_size(p) for p in paths)


def _digests(paths: list[str]) -> list[str]:
    with ThreadPoolExecutor(min(4, len(paths)), thread_name_prefix="genotile-digest") as pool:
        return list(pool.map(known_digest, paths))


def _further(record: dict | None, paths: list[str], settings: dict) -> tuple[list[str] | None, str]:
    """The files of `paths` after the earlier store's (its record's `files`: each the same path,
    size and content digest), or None and why not ("" where there is no earlier store)."""
    if record is None:
        return None, ""
    changed = append.settings_changed(record, settings)
    if changed:
        return None, changed
    earlier = record["input"].get("files") or []
    if len(paths) <= len(earlier):
        return None, f"the list holds {len(paths)} files, the earlier one {len(earlier)}: none added at its end"
    why = earlier_changed(paths, earlier, record.get("sources") or {}, settings["options"] or None)
    return (paths[len(earlier) :], "") if why is None else (None, why)


def earlier_changed(paths: list[str], earlier: list[dict], made: dict, options: dict | None) -> str | None:
    """Why the first files of `paths` are not the `earlier` ones an earlier store recorded (each
    the same path, size and content digest: store/append.py `files`; and, `made` being that
    store's `sources`, the same companions and option files), in words; None where they are
    ("" where a file is missing: the reader names it)."""
    recorded = append.each_file(made)  # what each was read with
    if not earlier or len(recorded) != len(earlier):
        return "the earlier store's record names no files"
    for k, (path, was) in enumerate(zip(paths, earlier, strict=False), start=1):
        if path != was["path"]:
            return f"file {k} of the list is {path}, {was['path']} before (files are added at the end)"
        if not os.path.exists(path):
            return ""
        if content_size(path) != was["size"] or known_digest(path) != was["digest"]:
            return f"{path} changed since the earlier store was made"
        # its companions and option files too (a PLINK fileset's .bim/.fam, a regions file)
        differ = differences(recorded[k - 1], sources(path, options, input_digest=was["digest"]))
        if differ:
            return f"{path}: {'; '.join(differ)}"
    return None


def store(
    paths: list[str],
    encoding: str,
    ingest_manifest_out,
    store_dir,
    block_size,
    seed: int,
    *,
    options: dict | None = None,
    collapse_duplicates: bool = False,
    metrics=(),
    backend="auto",
    dense_max=None,
    bounds: dict | None = None,
    after_pack=None,
    say=lambda line: None,
):
    """store/append.store of a list input: the earlier store grown by the further files' vectors
    alone where the list is the earlier one with files added at its end, else made in full
    (saying why where an earlier store was there); the same files.

    Parameters
    ----------
    paths : list of str
        Two or more files of one kind (module docstring).
    encoding, ingest_manifest_out, store_dir, block_size, seed, options, collapse_duplicates,
    metrics, backend, dense_max, bounds, after_pack, say
        As store/append.store.

    Returns
    -------
    Plan
    """
    refuse_missing(paths)  # an earlier store's append path sizes and hashes the files first
    store_dir = Path(store_dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    record = append.read_record(store_dir)
    collapse = stage.wants_collapse(encoding, collapse_duplicates)
    settings = append.settings_of(encoding, options, collapse, block_size, seed)
    t0 = time.perf_counter()
    further, why = _further(record, paths, settings)
    if further is not None:
        log.info(
            "store: the earlier %d file(s) of the list checked in %.3f s",
            len(paths) - len(further),
            time.perf_counter() - t0,
        )
    if further is not None:
        assert record is not None
        auto = {"metrics": metrics, "backend": backend, "dense_max": dense_max}
        job = append.AppendJob(
            list_label(paths), encoding, ingest_manifest_out, store_dir, record, settings, _total_size(paths), options,
            bounds, auto, say,
        )  # fmt: skip
        p, why = _append(job, paths, further)
        if p is not None:
            if after_pack is not None:
                after_pack(p)
            return p
    if why:
        say(f"recomputing in full: {why}")
    return fresh(
        paths,
        encoding,
        ingest_manifest_out,
        store_dir,
        block_size,
        seed,
        settings,
        metrics=metrics,
        backend=backend,
        dense_max=dense_max,
        bounds=bounds,
        after_pack=after_pack,
    )


def fresh(
    paths: list[str],
    encoding: str,
    ingest_manifest_out,
    store_dir: Path,
    block_size,
    seed: int,
    settings: dict,
    **given,
):
    """A list input's store made in full (stage.store of the files read as one, `read_list`) and
    its append record; `given`: stage.store's metrics, backend, dense_max, bounds, after_pack."""
    options = settings["options"] or None
    seen = stat_of_read(paths, options)  # before the read: a file written to meanwhile gets no record
    reader = read_list(paths, encoding, options, canonical=settings["collapse"])
    digests = _digests(paths)
    made: list = []

    def on_ingest(ingested) -> None:
        variants = None if ENCODINGS[encoding].source == "alignment" else reader.variants
        complete(ingested.manifest, paths, reader.sha256s, digests, options, variants)
        write_record(ingest_manifest_out, ingested.manifest)
        made.append(ingested)

    p = stage.store(
        reader,
        encoding,
        ingest_manifest_out,
        store_dir,
        block_size,
        seed,
        collapse_duplicates=settings["collapse"],
        on_ingest=on_ingest,
        **given,
    )
    links = ENCODINGS[encoding].source != "alignment" and not ENCODINGS[encoding].transposed
    append.record_store(store_dir, ingest_manifest_out, settings, _total_size(paths), made[0], links=links)
    if stat_of_read(paths, options) != seen:  # its digests may not be what was read: no append from it
        (store_dir / append.RECORD).unlink(missing_ok=True)
        extend.forget(store_dir, None)
        log.info("store: a listed file was written to while the store was made; nothing recorded for an append")
    return p


def _append(job, paths: list[str], further: list[str]):
    """The grown store of a list with `further` files added (store/append.grow), or (None, why)
    with nothing written; the whole list read again where the further files alone do not give
    it, or its blocks are outgrown (store/append.afresh: then planned afresh)."""
    t0 = time.perf_counter()
    hashed = hashed_files(job.record["input"]["files"], further)
    if ENCODINGS[job.encoding].source == "alignment":
        grown, m, why = _grown_alignment(job, paths, further, hashed)
    else:
        grown, m, why = _grown_genotypes(job, paths, further, hashed)
    if grown is not None and append.afresh(job, m, grown.index) is None:
        return append.grow(job, m, grown, (t0, time.perf_counter())), ""
    if grown is not None:  # the earlier blocks outgrown: planned afresh (store/append.regrow says so)
        why = "the store is planned afresh"
    if ENCODINGS[job.encoding].transposed:  # every vector changes: in full
        return None, why
    return _reingest(job, paths, hashed, why), ""


def _reingest(job, paths: list[str], hashed, why: str):
    """The grown store from every file of the list read again (`read_list`), planned as appended
    (store/append.regrow: the earlier tiles kept, as where a FASTA's new records make a column
    variable); `why`: why the further files alone did not do, logged."""
    log.info("store: the whole list is read again: %s", why)
    t0 = time.perf_counter()
    codes = job.store_dir / "codes.partial.npy"
    genotypes = ENCODINGS[job.encoding].source != "alignment"
    try:
        options = job.settings["options"] or None
        reader = read_list(paths, job.encoding, options, canonical=job.settings["collapse"])
        made = stage.ingest(reader, job.encoding, codes, None, collapse_duplicates=job.settings["collapse"], hold=True)
        digests = hashed.result()[1]
        complete(made.manifest, paths, reader.sha256s, digests, options, reader.variants if genotypes else None)
        write_record(job.ingest_manifest_out, made.manifest)
        why_not = None
        recorded = job.record.get("variants_sha256")
        if genotypes and recorded and made.manifest.get("variants_sha256") != recorded:
            why_not = "the earlier files' variants are not the ones the earlier store holds"
        return append.regrow(job, made, why_not, t0, links=genotypes)
    finally:
        codes.unlink(missing_ok=True)


def hashed_files(earlier: list[dict], further: list[str]) -> Future[tuple[list[str], list[str]]]:
    """A future of (every listed file's SHA-256, every listed file's content digest): the earlier
    files' as their record (`earlier`: store/append.py `files`) holds them (`earlier_changed`
    checked their digests), the further files' hashed on a thread beside the reading of their
    vectors (hashlib releases the GIL). A list input's append, and a query's FILE list grown
    (store/query_append.py)."""

    def hashes() -> tuple[list[str], list[str]]:
        added = [(content_sha256(p), known_digest(p)) for p in further]
        return [f["sha256"] for f in earlier] + [a[0] for a in added], [f["digest"] for f in earlier] + [
            a[1] for a in added
        ]

    pool = ThreadPoolExecutor(1, thread_name_prefix="genotile-sha256")
    try:
        return pool.submit(hashes)
    finally:
        pool.shutdown(wait=False)


def further_records(further: list[str], n_fields: int) -> tuple[tuple[list[str], np.ndarray] | None, str]:
    """The records of further FASTA files of a list, each read alone from its start (store/
    extend.new_records): (their names and rows, file after file), or (None, "the file: why
    not"). A list input's append, and a query's FILE list grown (store/query_append.py)."""
    ids: list[str] = []
    rows = []
    for path in further:
        read, why = extend.new_records(path, 0, n_fields)
        if read is None:
            return None, f"{path}: {why}"
        ids += read[0]
        rows.append(read[1])
    return (ids, np.concatenate(rows)), ""


def _grown_alignment(job, paths: list[str], further: list[str], hashed):
    """(append.Grown, ingest manifest, "") of further FASTA files' records read alone (store/
    extend.py new_records, grown), or (None, None, why)."""
    from genotile.core.encode import NUCLEOTIDE
    from genotile.store.ingest import alignment_manifest
    from genotile.store.pack import categorical_keys

    before, why = extend.earlier(job.store_dir, job.record)
    if before is None:
        return None, None, why
    n_fields = int(before.manifest["n_fields"])
    read, why = further_records(further, n_fields)
    if read is None:
        return None, None, why
    ids, rows = read
    every = [*before.manifest["ids"], *ids]
    if len(set(every)) != len(every):
        return None, None, "a further file's sequence name is taken"  # the list's read names it
    new, why = extend.grown(ids, rows, before)
    if new is None:
        return None, None, why
    n_old = int(job.record["n_input"])
    index, first = append.index_appended(job.record, n_old, new, job.settings["collapse"])
    sha256s, digests = hashed.result()
    m = alignment_manifest(
        list_label(paths), ListedAlignment.kind, job.encoding, every, n_fields, new.keep.size, listed_sha256(sha256s)
    )
    complete(m, paths, sha256s, digests, job.options)
    keys = categorical_keys(NUCLEOTIDE.name, new.enc)
    return append.Grown(before.planes, new, index, first, keys, new.enc.layout, {}), m, ""


def _grown_genotypes(job, paths: list[str], further: list[str], hashed):
    """(append.Grown, ingest manifest, "") of further genotype files' samples read alone, where
    they hold the earlier files' variants and keep the earlier layout; or (None, None, why)."""
    from genotile.store.pack import layout_from_json
    from genotile.version import __version__

    if ENCODINGS[job.encoding].transposed:
        return None, None, "a further file's samples change every variant's vector (ccc2)"
    if not job.record.get("variants_sha256"):
        return None, None, "the earlier store did not record its variants (not a list of genotype files)"
    linked, why = extend.earlier_links(job.store_dir, job.record)
    if linked is None:
        return None, None, why
    planes, before = linked
    read = [_genotype_part(p, job.encoding, job.settings["options"] or None) for p in further]
    for path, (part, _, _) in zip(further, read, strict=True):
        if variants_sha256(list(part.fields or [])) != job.record["variants_sha256"]:
            return None, None, f"{path} holds other variants than the earlier files"
    codes = np.concatenate([part.data for part, _, _ in read])
    layout = layout_from_json(before["layout"])
    if genotype_layout(codes, job.encoding) != layout and layout.complete:
        return None, None, "a further file's samples miss calls where the earlier ones missed none"
    ids = [*before["ids"], *(name for part, _, _ in read for name in part.ids)]
    if len(set(ids)) != len(ids):
        return None, None, "a further file's sample name is taken"  # the list's read names it
    keys = [k for _, _, k in read]
    sha256s, digests = hashed.result()
    counts = listed_counts([before.get("ingest_counts") or {}, *(stats for _, stats, _ in read)])
    m = {
        "genotile": __version__,
        "input": list_label(paths),
        "input_sha256": listed_sha256(sha256s),
        "format": ListedGenotypes.format,
        "encoding": job.encoding,
        "n_vectors": len(ids),
        "n_fields": int(before["n_fields"]),
        "n_kept": int(before["n_fields"]),
        "options": {},
        "counts": counts,
        "ids": ids,
        **{
            key: [*before[key], *(v for k in keys for v in k[key])]
            for key in ("fids", "iids")
            if key in before and all(key in k for k in keys)
        },
    }
    complete(m, paths, sha256s, digests, job.settings["options"] or None, read[0][0].fields)
    new = NewSamples([name for part, _, _ in read for name in part.ids], codes, layout)
    n_old = int(job.record["n_input"])
    index, first = append.index_appended(job.record, n_old, new, job.settings["collapse"])
    extra = {"encoding": job.encoding, "n_kept": int(before["n_fields"]), "ingest_counts": counts}
    return append.Grown(planes, new, index, first, extra, layout, {}), m, ""


def current_store(
    paths: list[str], encoding: str, ingest_manifest_out, store_dir, block_size, seed: int, **given
) -> None:
    """`genotile run`'s store of a list input (store/append.current_store's): kept where it is the
    one `store` made last from these files' content with these settings, else made by `store`
    (a further file's vectors appended; the one line of `say` logged)."""
    store_dir, options = Path(store_dir), given.get("options")
    collapse = stage.wants_collapse(encoding, given.get("collapse_duplicates", False))
    settings = append.settings_of(encoding, options, collapse, block_size, seed)
    built = append.whole(store_dir, ingest_manifest_out, settings)
    if built is not None and all(os.path.exists(p) for p in paths):
        recorded = (built.get("sources") or {}).get("listed") or []
        # each file as it is now, with its companions and option files (store/sources.py)
        if len(recorded) == len(paths) and not any(
            differences(r, sources(p, options)) for r, p in zip(recorded, paths, strict=True)
        ):
            return
    made = (paths, encoding, ingest_manifest_out, store_dir, block_size, seed)
    store(*made, **given, say=lambda line: log.info("store (%s): %s", encoding, line))
