"""Screening samples (FASTQ) against signatures (FASTA) with N wildcards.

`encode` holds the data (samples, signatures, probes), `numpy_search` and `cupy_search`
find each pair's first match (`backend` picks one), `score` turns matches into exact scores, `stage` runs the
pipeline's ingest, tile and merge.
"""
