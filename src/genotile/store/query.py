"""Query mode's store: a dataset's input and a FILE, one store of n + r vectors (issue 27, `against:`).

Both are read (store/query.read_part) and encoded together by the one ingest, as an array in
memory (io/readers/query.py): the input's vectors are rows 0..n-1, the FILE's n..n+r-1. The plan
(core/plan.py, `n_against`) permutes and blocks each part within itself, so its tiles are
(input block, FILE block) only: the r x n cross pairs, each computed once, none wasted. Then the
same pack as any store (store/stage.pack). Identical vectors are not collapsed in a query store
(the tiles hold cross pairs only, which the collapse's self pairs and weighing do not model);
it costs a query nothing it would save often: the FILE is rarely full of copies of the input.

Where FILE has an all-pairs store beside this one (store/against.py), the same store is made from
it and the input alone, FILE not read (`reuse_file_store`); else both files are read, as above.

What the workflow's store job runs for a dataset with `against:` (scripts/store.py), what
`genotile run --against` runs (`current_query_store`) and what the API runs (`ingest_query`).
"""

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from genotile.core.blocks import AUTO
from genotile.core.encodings import ENCODINGS
from genotile.core.limits import BYTES_PER_PAIR
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.io.planfile import write_plan
from genotile.io.readers.query import Part, QueryAlignment, QueryGenotypes
from genotile.store import stage
from genotile.store.sources import content_sha256, differences, sources, stat_of
from genotile.util.atomic import write_record

if TYPE_CHECKING:
    from genotile.io.fasta_mmap import RegularFasta

log = logging.getLogger("genotile")


def read_part(path, encoding: str, options: dict | None = None, keys: dict | None = None) -> tuple[Part, dict]:
    """One side of a query (or one file of a list input, store/listed.py) read into memory: a
    FASTA's sequences, or a genotype input's codes with its reader's options applied; and the
    reader's counts ({} for an alignment). `keys`, given: updated with the reader's manifest keys
    (PLINK: FID and IID of each sample)."""
    from genotile.io.readers.base import GenotypeReader, reader_of

    reader = reader_of(path, encoding)
    sha256 = content_sha256(path)
    if ENCODINGS[encoding].source == "alignment":
        from genotile.io.fasta import read_alignment

        ids, rows = [], []
        for name, row in read_alignment(path):
            ids.append(name)
            rows.append(row)
        return Part(str(path), sha256, ids, np.stack(rows)), {}
    from genotile.store.ingest_genotypes import check_options

    given = check_options({k: v for k, v in (options or {}).items() if v is not None})
    assert issubclass(reader, GenotypeReader)
    with reader(path, **given) as opened:
        opened.want_ids = True  # the variants are compared between the two inputs by their IDs
        variant_ids, blocks = [], []
        for ids, codes in opened.blocks():
            variant_ids += list(ids)
            blocks.append(codes)
        if not blocks:
            raise GenotileError(f"{path}: no variants left after the VCF rules")
        codes = np.ascontiguousarray(np.concatenate(blocks).T)  # (samples, variants)
        samples, stats = list(opened.samples), dict(opened.stats)
        if keys is not None:
            keys.update(opened.manifest_keys())
    if ENCODINGS[encoding].transposed:  # variants are the vectors (ccc2), over the same samples
        return Part(str(path), sha256, variant_ids, codes, samples), stats
    return Part(str(path), sha256, samples, codes, variant_ids), stats


def held_alignments(input_path, against, encoding: str) -> tuple[Part, Part, QueryAlignment] | None:
    """(input part, FILE part, their QueryAlignment) of two regular FASTA files of one length, held
    as one (io/readers/fasta.py hold_regulars: gathered from their memory maps, folded and counted
    on threads; their SHA-256s alongside); each part's data a view of the held rows. None: not two
    such files (arrays, another format, an irregular or damaged file, another length, a byte the
    fast path does not take), or GPU packing insisted on: `read_part` reads them, and its errors
    name what is wrong.

    The one-record-at-a-time read took 68 s of a 75-s query of 2,000 sequences against 200,000 x 30
    kb on an H200 host (bench/RESULTS.md, "Session 12")."""
    from concurrent.futures import ThreadPoolExecutor

    from genotile.core.encode import ALPHABETS
    from genotile.io.readers.fasta import hold_regulars
    from genotile.store.query_append import sha256_and_state

    if ENCODINGS[encoding].source != "alignment" or isinstance(input_path, Part) or isinstance(against, Part):
        return None
    layouts = regular_layouts([input_path, against], encoding)
    if layouts is None:
        return None
    with ThreadPoolExecutor(2, thread_name_prefix="genotile-sha256") as hashing:  # hashlib releases the GIL
        of_input, of_file = hashing.submit(content_sha256, input_path), hashing.submit(sha256_and_state, against)
        held = hold_regulars(layouts, ALPHABETS[encoding])
        digest, (file_digest, state) = of_input.result(), of_file.result()
    if held is None:
        return None
    n = layouts[0].n
    q = Part(str(input_path), digest, layouts[0].ids, held.rows[:n])
    # FILE's SHA-256 state kept: a FILE grown by records at its end resumes it (store/query_append.py)
    a = Part(str(against), file_digest, layouts[1].ids, held.rows[n:], state=state)
    return q, a, QueryAlignment(q, a, held)


def regular_layouts(paths, encoding: str) -> "list[RegularFasta] | None":
    """The layouts (io/fasta_mmap.RegularFasta) of FASTA files that are all regular alignments of
    one length, to be held as one (io/readers/fasta.py hold_regulars: a query's two files, a list
    input's); None where any is not (another format, an irregular or damaged file, another
    length), or GPU packing is insisted on (GENOTILE_GPU_PACK=1 packs from codes: the ingest
    holds nothing): then each is read a record at a time, and its errors name what is wrong."""
    from genotile.io import fasta_mmap
    from genotile.io.readers.base import reader_of
    from genotile.io.readers.fasta import FastaReader
    from genotile.store.pack import gpu_insisted

    if gpu_insisted():
        return None
    try:
        if any(reader_of(p, encoding) is not FastaReader for p in paths):
            return None
        layouts = [fasta_mmap.open_regular(p) for p in paths]
    except (GenotileError, OSError, ValueError):
        return None
    found = [layout for layout in layouts if layout is not None]
    if len(found) != len(layouts) or len({layout.length for layout in found}) != 1:
        return None
    return found


def _sum_counts(a: dict, b: dict) -> dict:
    """Two readers' counts added key by key (numbers), the others kept as the input's."""
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, (int, float)) and isinstance(out.get(key, 0), (int, float)):
            out[key] = out.get(key, 0) + value
        else:
            out.setdefault(key, value)
    return out


def ingest_query(input_path, against, encoding: str, options: dict | None = None, manifest_out=None):
    """Read both inputs and ingest them as one (store/ingest.py, held in memory).

    Parameters
    ----------
    input_path, against : str or os.PathLike or Part
        The dataset's input and the FILE it is compared against (of one kind: alignments of one
        length, or genotypes with the same variants; samples, for ccc2), or parts already read
        (the API's arrays).
    encoding : str
        The store's encoding.
    options : dict, optional
        The genotype readers' options, applied to both.
    manifest_out : str or os.PathLike, optional
        The ingest manifest, written.

    Returns
    -------
    store.ingest.Ingested
        The manifest (with a `query` record: each side's input, SHA-256 and vectors) and the
        codes, held.
    """
    return _ingest_query(input_path, against, encoding, options, manifest_out)[0]


def _ingest_query(input_path, against, encoding: str, options: dict | None = None, manifest_out=None):
    """`ingest_query`, and the FILE's SHA-256 state where its pass kept one (held_alignments)."""
    held = held_alignments(input_path, against, encoding)
    if held is not None:  # two regular FASTA files: gathered, folded and counted as one, on threads
        q, a, alignment = held
        reader: QueryAlignment | QueryGenotypes = alignment
    else:
        q, q_counts = (input_path, {}) if isinstance(input_path, Part) else read_part(input_path, encoding, options)
        a, a_counts = (against, {}) if isinstance(against, Part) else read_part(against, encoding, options)
        if ENCODINGS[encoding].source == "alignment":
            reader = QueryAlignment(q, a)
        else:
            reader = QueryGenotypes(q, a, ENCODINGS[encoding].transposed, _sum_counts(q_counts, a_counts))
    made = stage.ingest(reader, encoding, None, None, collapse_duplicates=False, hold=held is not None)
    paths = None if isinstance(input_path, Part) else (input_path, against)
    complete_manifest(made.manifest, q, a, paths, options)
    if manifest_out is not None:
        write_record(manifest_out, made.manifest)
    return made, a.state


def complete_manifest(m: dict, q: Part, a: Part, paths, options: dict | None, against_digest=None) -> None:
    """A query's ingest manifest given its query keys: the `query` record, the reader options and
    (`paths`: the input's and FILE's, None for arrays) what the store was made from, for reruns
    (genotile run); `against_digest`: FILE's content digest where it is known (store/sources.py)."""
    m["query"] = query_record(q, a)
    if options:
        m["options"] = {k: v for k, v in options.items() if v is not None}
    if paths is not None:
        input_path, against = paths
        m["sources"] = {
            "input": sources(input_path, options, input_sha256=q.sha256),
            "against": sources(against, options, input_sha256=a.sha256, input_digest=against_digest),
        }


def query_record(q: Part, a: Part) -> dict:
    """A query store's record of its two sides (ingest and store manifests, summary.json)."""
    return {
        "input": q.name,
        "input_sha256": q.sha256,
        "n_input": len(q.ids),
        "against": a.name,
        "against_sha256": a.sha256,
        "n_against": len(a.ids),
    }


def plan_query(manifest: dict, block_size, seed: int, plan_out=None, perm_out=None, **auto) -> Plan:
    """The query plan of an ingest manifest: its `query` record's n_against vectors last;
    `block_size` "auto" as stage.plan sizes it (`auto`: metrics, backend, dense_max)."""
    if block_size == AUTO:
        block_size = stage.resolve_auto_block_size(manifest, auto.get("metrics", ()), auto.get("backend", "auto"))
    elif isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise GenotileError(f"block_size must be a positive integer or 'auto', not {block_size!r}")
    p = Plan(int(manifest["n_vectors"]), int(block_size), int(seed), n_against=int(manifest["query"]["n_against"]))
    if plan_out is not None:
        write_plan(p, plan_out, perm_out)
    log.info("tile plan: %s", p.describe())
    return p


def check_query_bound(plan: Plan, metrics, thresholds: dict, pairs_max: int, where: str = "") -> None:
    """A 2-way metric with a null threshold refused where the query's cross pairs pass pairs_max
    (limits.check_pairs_bound's rule, over n x r pairs)."""
    null = [m for m in metrics if thresholds.get(m) is None]
    if null and plan.n_pairs > pairs_max:
        raise GenotileError(
            f"{where}{', '.join(null)} with a null threshold would write every one of the {plan.n_pairs:,} "
            f"pairs of {plan.n_query:,} x {plan.n_against:,} vectors (about "
            f"{plan.n_pairs * BYTES_PER_PAIR / 1e9:,.0f} GB of text); pairs_max is {pairs_max:,}: set a "
            "threshold or raise pairs_max"
        )


def query_store(
    input_path,
    against,
    encoding: str,
    ingest_manifest_out,
    store_dir,
    block_size,
    seed: int,
    *,
    options: dict | None = None,
    metrics=(),
    backend="auto",
    bounds: dict | None = None,
    after_pack: Callable[[Plan], None] | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Plan:
    """stage.store's query form: ingest both, plan the cross tiles, pack; the same files. Where
    the FILE grew at its end since the last query store (store/query_append.py), the earlier
    plan grown by the FILE's new records: only their cross pairs are computed.

    Parameters
    ----------
    input_path, against : str or os.PathLike
        The dataset's input and the FILE.
    encoding, ingest_manifest_out, store_dir, block_size, seed, options, metrics, backend, after_pack
        As stage.store.
    bounds : dict, optional
        {thresholds, pairs_max, where}: a null threshold past pairs_max cross pairs is refused
        before anything is packed.
    say : callable, optional
        Given the one console line of a FILE's append (vectors appended, cross pairs to compute),
        or of a query store made in full though an earlier one was there, and why.

    Returns
    -------
    Plan
    """
    from genotile.store import query_append

    store_dir = Path(store_dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    seen_stat = stat_of(against)  # before any read of it: query_append.write
    record = query_append.read_record(store_dir)
    settings = query_append.settings_of(encoding, options, block_size, seed)
    n_before, why = query_append.grown_by(record, input_path, against, settings, options)
    if n_before:  # the earlier store grown by the FILE's new records alone, where that gives it
        assert record is not None
        paths = (input_path, against)
        bound = None
        if bounds is not None:  # as the store made in full checks it, before anything is written

            def bound(p: Plan) -> None:
                check_query_bound(p, metrics, bounds["thresholds"], bounds["pairs_max"], bounds.get("where", ""))

        grown = query_append.grow(
            store_dir, record, n_before, paths, encoding, options, ingest_manifest_out, complete_manifest, say, bound
        )
        if grown is not None:
            grown_plan, columns, state = grown
            query_append.write(store_dir, input_path, against, settings, options, columns, state, seen_stat)
            if after_pack is not None:
                after_pack(grown_plan)
            return grown_plan
    reused = reuse_file_store(input_path, against, encoding, store_dir, options)
    if reused is not None:  # FILE's all-pairs store and the input alone (store/against.py)
        manifest = reused.manifest
        write_record(ingest_manifest_out, manifest)
        columns, state = reused.new.columns, reused.file.state
    else:
        made, state = _ingest_query(input_path, against, encoding, options, ingest_manifest_out)
        manifest, columns = made.manifest, made.columns
    t1 = time.perf_counter()
    p: Plan | None = None
    if n_before:
        assert record is not None
        p = query_append.plan(manifest, record, n_before, say)
        why = "" if p is not None else "the store's vectors are not the earlier ones, then the FILE's new ones"
    if p is None:
        if why:
            say(f"recomputing in full: {why}")
        p = plan_query(manifest, block_size, seed, metrics=metrics, backend=backend)
    if bounds is not None:
        check_query_bound(p, metrics, bounds["thresholds"], bounds["pairs_max"], bounds.get("where", ""))
    write_plan(p, store_dir / "plan.json", store_dir / "perm.npy")
    t2 = time.perf_counter()
    if reused is not None:
        from genotile.store import against as file_store

        file_store.pack(reused, p, store_dir)
    else:
        pack_query(made, store_dir)
    if p.segments:  # the earlier parts' tiles accepted (store/manifest.py), before any tile reads them
        assert record is not None
        query_append.with_parts(store_dir / "manifest.json", record, p)
    log.info("store stages (s): ingest %.3f, plan %.3f, pack %.3f", t1 - t0, t2 - t1, time.perf_counter() - t2)
    # last, the store whole: with what a FILE grown next reads in place of the files
    query_append.write(store_dir, input_path, against, settings, options, columns, state, seen_stat)
    if after_pack is not None:
        after_pack(p)
    return p


def reuse_file_store(input_path, against, encoding: str, store_dir: Path, options: dict | None):
    """The query store's ingest from FILE's all-pairs store and the input alone (store/against.py
    `Reused`), or None where FILE has no store that gives the same store (then both files are
    read, `ingest_query`); one line in the log says which, and why."""
    from genotile.store import against as file_store

    found, why = file_store.find(against, encoding, store_dir, options)
    reused, why = file_store.ingest(input_path, against, encoding, found) if found is not None else (None, why)
    if reused is None:
        log.info("query store (%s): both files read, FILE's all-pairs store not reused: %s", encoding, why)
        return None
    assert found is not None
    complete_manifest(reused.manifest, *reused.parts, (input_path, against), options, against_digest=found.digest)
    log.info(
        "query store (%s): FILE's %d vectors from its all-pairs store in %s, the input's %d read",
        *(encoding, len(found.kept.manifest["ids"]), found.folder, len(reused.new.ids)),
    )
    return reused


def pack_query(made, store_dir) -> dict:
    """stage.pack of a query's held codes, the store manifest then given the `query` record
    (before any tile reads it: a tile's store identity is the manifest's input and plan)."""
    store_dir = Path(store_dir)
    m = stage.pack(
        made.stored,
        made.manifest,
        store_dir / "plan.json",
        store_dir / "perm.npy",
        store_dir / "planes.npy",
        store_dir / "manifest.json",
    )
    m["query"] = made.manifest["query"]
    write_record(store_dir / "manifest.json", m)
    return m


def current_query_store(
    input_path, against, encoding: str, outdir, block_size, seed, options=None, *, metrics=(), backend="auto"
) -> None:
    """`genotile run --against`: the query store in `outdir`, made again unless its ingest records
    the same two inputs (content, options) and its plan the same settings."""
    outdir = Path(outdir)
    imani, store = outdir / "ingest" / f"{encoding}.json", outdir / "store" / encoding
    try:
        recorded = json.loads(imani.read_text(encoding="utf-8"))
        built = json.loads((store / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = built = None
    if isinstance(recorded, dict) and isinstance(built, dict) and isinstance(recorded.get("sources"), dict):
        changed = differences(recorded["sources"].get("input"), sources(input_path, options))
        changed += differences(recorded["sources"].get("against"), sources(against, options))
        have = built.get("plan") or {}
        if block_size != AUTO and (have.get("block_size"), have.get("seed")) != (block_size, seed):
            changed.append("block_size or seed")
        if built.get("input_sha256") != recorded.get("input_sha256"):
            changed.append("the ingest it was packed from")
        from genotile.store import query_append
        from genotile.store.manifest import part_key

        last = ((query_append.read_record(store) or {}).get("parts") or [{}])[-1]
        if last.get("key") != part_key(built):  # a run killed before the store's record
            changed.append("the store's record")
        if not changed and all((store / f).exists() for f in ("plan.json", "perm.npy", "planes.npy")):
            return
        log.info("query store (%s): recomputing, changed since the last run: %s", encoding, "; ".join(changed))
    query_store(
        input_path,
        against,
        encoding,
        imani,
        store,
        block_size,
        seed,
        options=options,
        metrics=metrics,
        backend=backend,
        say=lambda line: log.info("query store (%s): %s", encoding, line),
    )
