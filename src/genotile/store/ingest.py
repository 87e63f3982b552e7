"""Ingest: read an input, check it, keep the informative fields, write their codes.

`ingest` dispatches on the encoding: alphabets read an alignment (below),
genotype encodings a VCF/BCF (ingest_vcf.py).

Alignments: two streaming passes over the file: the first finds the columns that hold two
or more distinct symbols (the only ones that can make two vectors differ), the
second writes those columns' codes, one row per vector, into a memory-mapped
uint8 matrix (vectors x kept fields) in input order.
"""

import hashlib
import json

import numpy as np

from genotile import __version__
from genotile.core.encode import ALPHABETS, ColumnScan
from genotile.errors import GenotileError
from genotile.io.atomic import atomic_path, write_text
from genotile.io.fasta import read_alignment
from genotile.runtime.progress import Progress
from genotile.store.ingest_vcf import ENCODINGS as VCF_ENCODINGS
from genotile.store.ingest_vcf import ingest_vcf
from genotile.store.sources import sources


def file_sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def ingest(path, encoding: str, codes_out, manifest_out, **options) -> dict:
    """Write the codes matrix (vectors x kept fields) of `path` for one encoding.

    `options` are the VCF reader's (multiallelic, filter_pass, samples, regions);
    alignments take none.
    """
    if encoding in ALPHABETS:
        given = sorted(k for k, v in options.items() if v is not None)
        if given:
            raise GenotileError(f"option(s) {', '.join(given)} apply to VCF input, not to {path}")
        m = ingest_alignment(path, encoding, codes_out, manifest_out)
    elif encoding in VCF_ENCODINGS:
        m = ingest_vcf(path, encoding, codes_out, manifest_out, **options)
    else:
        raise GenotileError(f"unknown encoding {encoding!r}")
    # what the codes were computed from (input, options, option files, index), for reruns to compare
    m["sources"] = sources(path, options, input_sha256=m["input_sha256"])
    write_text(manifest_out, json.dumps(m, indent=1) + "\n")
    return m


def ingest_alignment(path, alphabet: str, codes_out, manifest_out) -> dict:
    """Pass 1: informative columns; pass 2: their codes. Returns the manifest."""
    alpha = ALPHABETS[alphabet]
    ids: list[str] = []
    scan = None
    progress = Progress(f"ingest pass 1 ({alphabet} columns)")
    for name, raw in read_alignment(path):
        if scan is None:
            scan = ColumnScan(raw.size)
        scan.add(alpha.encode(raw))
        ids.append(name)
        progress.update(len(ids))
    progress.finish(len(ids))
    keep = np.flatnonzero(scan.informative)
    n, length = len(ids), scan.first.size

    progress = Progress("ingest pass 2 (codes)", total=n)
    with atomic_path(codes_out) as tmp:
        codes = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(n, keep.size))
        row = -1
        for row, (name, raw) in enumerate(read_alignment(path)):
            if row >= n or name != ids[row]:
                raise GenotileError(f"{path}: the file changed while it was being read")
            codes[row] = alpha.encode(raw[keep])
            progress.update(row + 1)
        if row + 1 != n:
            raise GenotileError(f"{path}: the file changed while it was being read")
        codes.flush()
        del codes
    progress.finish(n)

    manifest = {
        "genotile": __version__,
        "input": str(path),
        "input_sha256": file_sha256(path),
        "format": "fasta",
        "alphabet": alphabet,
        "n_vectors": n,
        "n_fields": int(length),
        "n_kept": int(keep.size),
        "ids": ids,
    }
    write_text(manifest_out, json.dumps(manifest, indent=1) + "\n")
    return manifest
