"""Screening samples (FASTQ) against signatures (FASTA) with N wildcards.

`encode` holds the data (samples, signatures, probes), `numpy_backend` and `cupy_backend`
find each pair's first match, `score` turns matches into exact scores, `steps` runs the
pipeline's ingest, tile and merge.
"""
