"""Readers, writers and checks of files: FASTA, FASTQ, VCF/BCF, regions, tables, tile files, atomic writes."""
