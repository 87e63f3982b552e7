"""What every summary.json records besides its workload's results: the input it was made from,
each output's file and digest, and the versions that made it (pairs, triples and screen merges)."""

import platform

import numpy as np

from genotile.util.atomic import written
from genotile.util.checksums import file_digest
from genotile.version import __version__


def input_provenance(manifest: dict) -> dict:
    """The store's input and its SHA-256 (and the VCF reader's rule counts), for a summary.json."""
    out = {"input": manifest["input"], "input_sha256": manifest["input_sha256"]}
    if "ingest_counts" in manifest:  # VCF rules
        out["ingest_counts"] = manifest["ingest_counts"]
    return out


def output_records(outputs: dict) -> dict:
    """{name: {file, digest}} of a merge's outputs: util/checksums.file_digest, pieces hashed on
    threads (one SHA-256 stream over king_20k's 8 GB matrix.tsv took 9 s of its merge). Each
    file's content as just written: its temporary file while its rename is held back (`genotile
    run`: util/atomic.renamed_together)."""
    return {name: {"file": str(p), "digest": file_digest(written(p))} for name, p in outputs.items()}


def versions() -> dict:
    return {"genotile": __version__, "numpy": np.__version__, "python": platform.python_version()}
