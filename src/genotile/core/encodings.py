"""Every store encoding's facts, in one place: what it is read from, what its vectors and fields
are, its bit planes, and whether identical vectors may be collapsed.

An encoding is how a store holds its input as bit planes (docs/bitplanes.md). A metric names
the encoding it reads (core/metrics.py `MetricFacts.encoding`); everything else that depends on
the encoding (block sizing, the genotype planes, which inputs can feed it, the duplicate
collapse, the API's orientation) reads it from `ENCODINGS`.

>>> ENCODINGS["genotype_t"].vectors, ENCODINGS["genotype_t"].fields
('variants', 'samples')
>>> [name for name, e in ENCODINGS.items() if e.collapsible]
['nucleotide', 'categorical', 'genotype']
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Encoding:
    """The facts of one store encoding.

    Parameters
    ----------
    name : str
        The store's folder name (`results/<dataset>/store/<name>/`).
    source : {"alignment", "genotypes"}
        What it is read from: a FASTA alignment, or genotypes (VCF/BCF, PLINK, VCF-Zarr).
    vectors, fields : str
        What a row and a column of the store are ("sequences" x "columns", "samples" x
        "variants", or the transpose, "variants" x "samples").
    planes_per_field : int
        Bit planes per kept field: exact for genotypes, an upper estimate for an alphabet
        (its symbol planes depend on the columns), used to size blocks before the store is packed.
    planes : tuple of str
        The genotype planes, in store order (core/genotype.py); () for an alphabet encoding.
    collapsible : bool
        Whether identical vectors may be computed once (store/duplicates.py): not for a store
        that a 3-way job reads, whose triples are not expanded from the distinct ones.
    """

    name: str
    source: str
    vectors: str
    fields: str
    planes_per_field: int
    planes: tuple[str, ...] = ()
    collapsible: bool = True

    @property
    def genotypes(self) -> bool:
        """Whether the encoding is read from genotypes (VCF/BCF, PLINK, VCF-Zarr)."""
        return self.source == "genotypes"

    @property
    def transposed(self) -> bool:
        """Whether the vectors are variants (the transpose of the readers' samples x variants)."""
        return self.vectors == "variants"


ENCODINGS: dict[str, Encoding] = {
    e.name: e
    for e in (
        # V where data is missing, N, and S_t on columns of 3+ symbols
        Encoding("nucleotide", "alignment", "sequences", "columns", planes_per_field=2),
        Encoding("categorical", "alignment", "sequences", "columns", planes_per_field=3),
        # ibs, king: L H V and the derived Het, Hom0 that save products (core/metrics.py)
        Encoding("genotype", "genotypes", "samples", "variants", 5, ("L", "H", "V", "Het", "Hom0")),
        # ccc2, ccc3: L H V are all the CCC reads; ccc3 reads this store too, so it is not collapsed
        Encoding("genotype_t", "genotypes", "variants", "samples", 3, ("L", "H", "V"), collapsible=False),
    )
}

GENOTYPE_ENCODINGS = tuple(name for name, e in ENCODINGS.items() if e.genotypes)
