"""A dataset's input given as a list of files of one kind (issue 27, point 1): the vectors of the
first file, then the second's, and so on, as one input.

A list of FASTA alignments of one length is one alignment of their records in order; a list of
genotype inputs (VCF/BCF, PLINK filesets, VCF-Zarr) holding the same variants in the same order
(their IDs, after the reader options: checked, one line naming the file that differs) is one input
of their samples in order. A one-file list is that file.
"""

import os


def files_of(given) -> list[str]:
    """A dataset's `input` (a path, or a list of paths) as the list of its files.

    >>> files_of("a.fa")
    ['a.fa']
    >>> files_of(["a.fa", "b.fa"])
    ['a.fa', 'b.fa']
    """
    if isinstance(given, (str, os.PathLike)):
        return [os.fspath(given)]
    return [os.fspath(p) for p in given]


def given(input_) -> "str | list[str]":
    """A dataset's `input` as the store takes it: one file as its path (a one-file list too), two or
    more as their list.

    >>> given(["a.fa"])
    'a.fa'
    >>> given(["a.fa", "b.fa"])
    ['a.fa', 'b.fa']
    """
    files = files_of(input_)
    return files[0] if len(files) == 1 else files
