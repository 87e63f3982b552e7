"""The tile plan: a seeded permutation of the vectors, blocks, and unique tiles.

Vectors are permuted once (so dense and sparse regions spread over all tiles),
then cut into blocks of `block_size` consecutive permuted rows. Tile (I, J)
with I <= J compares block I with block J; a diagonal tile counts each pair once.
"""

from dataclasses import MISSING, asdict, dataclass, field, fields

import numpy as np


@dataclass(frozen=True)
class Plan:
    """The tile plan of a dataset: n vectors, blocks of `block_size` permuted rows, tiles I <= J.

    Parameters
    ----------
    n_vectors : int
        Vectors of the dataset (rows of the store).
    block_size : int
        Vectors per block (the last block may be shorter).
    seed : int
        Seed of the permutation; it changes no output byte.
    n_input : int, optional
        Input vectors, where identical ones were collapsed (store/duplicates.py): then
        n_vectors counts the distinct ones. 0 (the default): every input vector is a row.

    Examples
    --------
    >>> p = Plan(n_vectors=10, block_size=4, seed=1)
    >>> p.n_blocks, p.block(2), p.n_pairs
    (3, slice(8, 10, None), 45)
    >>> p.tiles()
    [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]
    >>> sorted(p.permutation().tolist()) == list(range(10))
    True
    """

    n_vectors: int
    block_size: int
    seed: int
    # keyword-only, so a subclass's own fields keep their positions (Plan3(n, block_size, seed, stages))
    n_input: int = field(default=0, kw_only=True)

    @property
    def input_vectors(self) -> int:
        """Vectors of the input (the outputs' rows): n_input where duplicates were collapsed."""
        return self.n_input or self.n_vectors

    @property
    def n_blocks(self) -> int:
        return max(1, -(-self.n_vectors // self.block_size))

    def block(self, index: int) -> slice:
        """Permuted rows of block `index`: [index * block_size, min((index + 1) * block_size, n))."""
        start = index * self.block_size
        return slice(start, min(start + self.block_size, self.n_vectors))

    def tiles(self) -> list[tuple[int, int]]:
        """Every tile (I, J) with I <= J, row-major: one tile job each."""
        return [(i, j) for i in range(self.n_blocks) for j in range(i, self.n_blocks)]

    def permutation(self) -> np.ndarray:
        """int64 (n_vectors,): row r of the store holds vector permutation()[r] (numpy's default_rng(seed))."""
        return np.random.default_rng(self.seed).permutation(self.n_vectors)

    @property
    def n_pairs(self) -> int:
        """Unique pairs n (n - 1) / 2: each computed by exactly one tile."""
        return self.n_vectors * (self.n_vectors - 1) // 2

    def describe(self) -> str:
        n_tiles = len(self.tiles())
        return (
            f"{self.n_vectors} vectors in {self.n_blocks} block(s) of up to {self.block_size}: "
            f"{n_tiles} tile job(s) (I <= J), {self.n_pairs} unique pairs"
        )

    def to_json(self) -> dict:
        """plan.json: the fields (n_input only where set) and the derived n_blocks, n_tiles, n_pairs."""
        d = {k: v for k, v in asdict(self).items() if k != "n_input" or v}
        return {**d, "n_blocks": self.n_blocks, "n_tiles": len(self.tiles()), "n_pairs": self.n_pairs}

    @classmethod
    def from_json(cls, d: dict):
        """The plan a `to_json` dict describes (plan.json, a store manifest's "plan"); the
        derived keys are ignored, a field with a default may be missing.

        Examples
        --------
        >>> Plan.from_json(Plan(10, 4, 1).to_json())
        Plan(n_vectors=10, block_size=4, seed=1, n_input=0)
        """
        return cls(**{f.name: int(d[f.name]) for f in fields(cls) if f.name in d or f.default is MISSING})
