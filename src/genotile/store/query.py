"""Query mode's store: a dataset's input and a FILE, one store of n + r vectors (issue 27, `against:`).

Both are read (store/parts.read_part; either given as a list of files, as one: store/listed.py
read_listed) and encoded together by the one ingest, as an array in memory (io/readers/query.py):
the input's vectors are rows 0..n-1, the FILE's n..n+r-1. The plan
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

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from genotile.core.blocks import AUTO
from genotile.core.encodings import ENCODINGS
from genotile.core.limits import BYTES_PER_PAIR
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.io.planfile import write_plan
from genotile.io.readers.base import list_label
from genotile.io.readers.listed import listed_sha256
from genotile.io.readers.query import Part, QueryAlignment, QueryGenotypes
from genotile.store import stage
from genotile.store.inputs import files_of, given, refuse_missing
from genotile.store.listed import side_differences, side_sources
from genotile.store.parts import read_part, regular_layouts
from genotile.store.sources import content_sha256
from genotile.util.atomic import write_record

log = logging.getLogger("genotile")


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
    inputs, files = files_of(input_path), files_of(against)
    layouts = regular_layouts([*inputs, *files], encoding)
    if layouts is None:
        return None
    with ThreadPoolExecutor(min(4, len(layouts)), thread_name_prefix="genotile-sha256") as hashing:  # no GIL held
        of_input = [hashing.submit(content_sha256, f) for f in inputs]
        # one FILE's SHA-256 state kept: a FILE grown by records at its end resumes it (store/query_append.py)
        of_file = [hashing.submit(sha256_and_state, f) for f in files]
        held = hold_regulars(layouts, ALPHABETS[encoding])
        input_sha256s, file_sha256s = [f.result() for f in of_input], [f.result() for f in of_file]
    if held is None:
        return None
    n = sum(layout.n for layout in layouts[: len(inputs)])
    q = _held_part(inputs, input_sha256s, layouts[: len(inputs)], held.rows[:n])
    a = _held_part(files, [d for d, _ in file_sha256s], layouts[len(inputs) :], held.rows[n:])
    if len(files) == 1:
        a = dataclasses.replace(a, state=file_sha256s[0][1])
    return q, a, QueryAlignment(q, a, held)


def _held_part(files: list[str], sha256s: list[str], layouts, rows: np.ndarray) -> Part:
    """One side of a query held (`held_alignments`): a file's, or a list of files' as one."""
    ids = [name for layout in layouts for name in layout.ids]
    if len(files) == 1:
        return Part(files[0], sha256s[0], ids, rows)
    return Part(list_label(files), listed_sha256(sha256s), ids, rows, sha256s=sha256s)


def read_side(path, encoding: str, options: dict | None = None) -> tuple[Part, dict]:
    """One side of a query read into memory (`read_part`), or a list of files read as one
    (store/listed.read_listed)."""
    files = files_of(path)
    if len(files) == 1:
        return read_part(files[0], encoding, options)
    from genotile.store.listed import read_listed

    return read_listed(files, encoding, options)


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
        q, q_counts = (input_path, {}) if isinstance(input_path, Part) else read_side(input_path, encoding, options)
        a, a_counts = (against, {}) if isinstance(against, Part) else read_side(against, encoding, options)
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
    (genotile run); `against_digest`: FILE's content digest where it is known (store/sources.py;
    a list of files': one each)."""
    m["query"] = query_record(q, a)
    if options:
        m["options"] = {k: v for k, v in options.items() if v is not None}
    if paths is not None:
        input_path, against = paths
        m["sources"] = {
            "input": side_sources(input_path, q, options),
            "against": side_sources(against, a, options, against_digest),
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
    input_path, against : str, os.PathLike or list of them
        The dataset's input and the FILE; either a list of files read as one (`read_side`): a
        FILE given as a list grows by further FASTA files added at its end.
    encoding, ingest_manifest_out, store_dir, block_size, seed, options, metrics, backend, after_pack
        As stage.store.
    bounds : dict, optional
        {thresholds, pairs_max, where}: a null threshold past pairs_max cross pairs is refused
        before anything is packed.
    say : callable, optional
        Given the one console line of a FILE's append (vectors appended, cross pairs to compute),
        or of a query store made in full though an earlier one was there, and why (with
        `block_size` auto, a grown FILE's store whose auto blocks outgrow the earlier plan's more
        than twice: query_append.outgrown).

    Returns
    -------
    Plan
    """
    from genotile.store import query_append

    input_path, against = given(input_path), given(against)  # a one-file list: that file
    store_dir = Path(store_dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    # each file the store reads, before any read of them: again after the read, and in query_append.write
    seen_stat = query_append.stat_of_sides(input_path, against, options)
    record = query_append.read_record(store_dir)
    settings = query_append.settings_of(encoding, options, block_size, seed)
    n_before, why = query_append.grown_by(record, input_path, against, settings, options)

    def afresh(grown: dict) -> str | None:  # the earlier blocks outgrown (query_append.outgrown)
        assert record is not None
        return query_append.outgrown(grown, record, n_before, block_size, metrics, backend)

    if n_before:  # the earlier store grown by the FILE's new records alone, where that gives it
        assert record is not None
        paths = (input_path, against)
        bound = None
        if bounds is not None:  # as the store made in full checks it, before anything is written

            def bound(p: Plan) -> None:
                check_query_bound(p, metrics, bounds["thresholds"], bounds["pairs_max"], bounds.get("where", ""))

        grown = query_append.grow(
            store_dir,
            record,
            n_before,
            paths,
            encoding,
            options,
            ingest_manifest_out,
            complete_manifest,
            say,
            bound,
            afresh=afresh,
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
    if n_before and query_append.stat_of_sides(input_path, against, options) != seen_stat:
        # read in full after grown_by checked the files: what was read may not be what it checked,
        # and the earlier tiles are not kept (query_append.write then records nothing either)
        n_before, why = 0, "the input or the FILE was written to while the store read it"
    if n_before and (outgrown := afresh(manifest)) is not None:  # planned afresh, saying so
        say(outgrown)
        n_before, why = 0, ""
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

    if len(files_of(input_path)) > 1 or len(files_of(against)) > 1:
        log.info("query store (%s): both sides read, FILE's all-pairs store not reused: a list of files", encoding)
        return None
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
    """stage.pack of a query's held codes: the store manifest written once, with the ingest's
    `query` record (store/pack.write_manifest; before any tile reads it: a tile's store identity
    is the manifest's input and plan)."""
    store_dir = Path(store_dir)
    return stage.pack(
        made.stored,
        made.manifest,
        store_dir / "plan.json",
        store_dir / "perm.npy",
        store_dir / "planes.npy",
        store_dir / "manifest.json",
    )


def current_query_store(
    input_path, against, encoding: str, outdir, block_size, seed, options=None, *, metrics=(), backend="auto"
) -> None:
    """`genotile run --against`: the query store in `outdir`, made again unless its ingest records
    the same two inputs (content, options) and its plan the same settings."""
    refuse_missing(input_path)  # before the recorded sources are compared with the files
    refuse_missing(against)
    outdir = Path(outdir)
    imani, store = outdir / "ingest" / f"{encoding}.json", outdir / "store" / encoding
    try:
        recorded = json.loads(imani.read_text(encoding="utf-8"))
        built = json.loads((store / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = built = None
    if isinstance(recorded, dict) and isinstance(built, dict) and isinstance(recorded.get("sources"), dict):
        changed = side_differences(recorded["sources"].get("input"), input_path, options)
        changed += side_differences(recorded["sources"].get("against"), against, options)
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
        log.info("query store (%s): changed since the last run: %s", encoding, "; ".join(changed))
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
