"""One side of a query (or one file of a list input) read into memory (issue 27): a FASTA's
sequences, a genotype input's codes (`read_part`); whether FASTA files can be held as one
(`regular_layouts`). What store/query.py and store/listed.py read their files with."""

import os
from typing import TYPE_CHECKING

import numpy as np

from genotile.core.encodings import ENCODINGS
from genotile.errors import GenotileError
from genotile.io.readers.query import Part
from genotile.store.sources import content_sha256

if TYPE_CHECKING:
    from genotile.io.fasta_mmap import RegularFasta


def read_part(path, encoding: str, options: dict | None = None, keys: dict | None = None) -> tuple[Part, dict]:
    """One side of a query (or one file of a list input, store/listed.py) read into memory: a
    FASTA's sequences, or a genotype input's codes with its reader's options applied; and the
    reader's counts ({} for an alignment). `keys`, given: updated with the reader's manifest keys
    (PLINK: FID and IID of each sample)."""
    from genotile.io.readers.base import GenotypeReader, reader_of

    if not os.path.exists(path):  # the query's input or FILE, given as one file (a list's are checked)
        raise GenotileError(f"{path}: no such file")
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
