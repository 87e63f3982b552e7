"""`genotile run`'s store: what an earlier run made in its --outdir, kept where it was made from
the same input content, options and settings (store/sources.py), else made again, saying what
changed. An alignment's store is the workflow store job's (store/append.py: records appended at
the end of a FASTA keep the earlier plan's blocks, so that the earlier tiles stay valid), and so is
a list input's of either kind (store/listed.py: a further file appended the same way); a genotype
file's codes are kept, to plan and pack again from them where only the plan's settings changed.
Above stage.py and append.py, which it chains.
"""

import logging
from pathlib import Path

from genotile.core.blocks import AUTO
from genotile.core.encodings import ENCODINGS
from genotile.store import append, listed, stage
from genotile.store.inputs import given
from genotile.store.sources import differences, sources

log = logging.getLogger("genotile")


def current_store(
    input_path,
    encoding,
    outdir,
    block_size,
    seed,
    vcf_options=None,
    *,
    metrics=(),
    backend="auto",
    dense_max=None,
    collapse_duplicates=False,
) -> None:
    """Ingest, plan and pack into `outdir`, reusing each stage's files only where they were made
    from the same input content, options, option files and settings (store/sources.py); what
    changed is logged, and the stage and all after it are recomputed. An alignment's, or a list
    input's (`input_path` a list of two or more files, store/listed.py `given`): append.py
    `current_store`, which keeps no codes (an earlier run's are removed, never packed from
    again); a genotype file's codes are kept (ingest/<encoding>.codes.npy)."""
    input_path, outdir = given(input_path), Path(outdir)  # a one-file list: that file
    codes, imani = outdir / "ingest" / f"{encoding}.codes.npy", outdir / "ingest" / f"{encoding}.json"
    store = outdir / "store" / encoding
    if ENCODINGS[encoding].source == "alignment" or isinstance(input_path, list):
        codes.unlink(missing_ok=True)  # an earlier run's: never this store's, never packed from again
        of_input = listed.current_store if isinstance(input_path, list) else append.current_store
        of_input(
            input_path,
            encoding,
            imani,
            store,
            block_size,
            seed,
            options=vcf_options,
            collapse_duplicates=collapse_duplicates,
            metrics=metrics,
            backend=backend,
            dense_max=dense_max,
        )
        return
    recorded = stage.read_recorded(imani)
    changed = []
    if recorded is not None and codes.exists():
        changed = differences(recorded.get("sources"), sources(input_path, vcf_options))
        if bool(recorded.get("collapse_duplicates")) != stage.wants_collapse(encoding, collapse_duplicates):
            changed.append("collapse_duplicates")
        if changed:
            log.info("ingest (%s): recomputing, changed since the last run: %s", encoding, "; ".join(changed))
    if recorded is None or not codes.exists() or changed:
        recorded = stage.ingest(
            input_path, encoding, codes, imani, collapse_duplicates=collapse_duplicates, **(vcf_options or {})
        ).manifest
        changed = changed or ["the ingest"]
    built = stage.read_recorded(store / "manifest.json")
    if block_size == AUTO:
        block_size = stage.resolve_auto_block_size(recorded, metrics, backend, dense_max)
    if built is not None and not changed and all((store / f).exists() for f in stage.STORE_FILES):
        want = stage.plan_of_manifest(recorded, int(block_size), int(seed)).to_json()
        have = built.get("plan") or {}
        changed = [
            f"{k} ({have.get(k)} -> {want.get(k)})"
            for k in ("n_vectors", "block_size", "seed", "n_input")
            if have.get(k) != want.get(k)
        ]
        if (built.get("input_sha256"), built.get("sources")) != (recorded["input_sha256"], recorded.get("sources")):
            changed.append("the ingest it was packed from")
        if not changed:
            return
        log.info("plan and pack (%s): recomputing, changed since the last run: %s", encoding, "; ".join(changed))
    stage.plan(imani, block_size, seed, store / "plan.json", store / "perm.npy")
    stage.pack(codes, imani, store / "plan.json", store / "perm.npy", store / "planes.npy", store / "manifest.json")
