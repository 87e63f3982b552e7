"""The tile plan: a seeded permutation of the vectors, blocks, and unique tiles.

Vectors are permuted once (so dense and sparse regions spread over all tiles),
then cut into blocks of `block_size` consecutive permuted rows. Tile (I, J)
with I <= J compares block I with block J; a diagonal tile counts each pair once.

A query plan (`n_against` > 0: the input against a FILE, issue 27) holds the input's vectors
then the FILE's, each part permuted and cut into blocks of its own: its tiles are (input block,
FILE block) only, every one off the diagonal and whole, so the tile code computes the cross
pairs as it computes any tile with I != J, and none else.

An appended plan (`segments`: vectors appended at the end of the input, issue 27) keeps the
earlier plan's permutation and blocks for the earlier vectors and permutes and blocks each
appended part within itself after them: the earlier tiles are the earlier plan's, with the same
blocks of the same vectors, and `appended_tiles` are the ones with a block of the last part (new
x old, new x new), the only ones an append computes. A query plan's segments are appended to its
FILE part (records added at the end of the FILE): the input's blocks and the FILE's earlier ones
are the earlier plan's, the new FILE rows blocked after them, and `appended_tiles` the (input
block, new FILE block) tiles.
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
    n_against : int, optional
        A query plan: the last `n_against` vectors are the FILE's, compared with the first
        n_vectors - n_against (the input's) only. 0 (the default): all pairs.

    Examples
    --------
    >>> p = Plan(n_vectors=10, block_size=4, seed=1)
    >>> p.n_blocks, p.block(2), p.n_pairs
    (3, slice(8, 10, None), 45)
    >>> p.tiles()
    [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]
    >>> sorted(p.permutation().tolist()) == list(range(10))
    True
    >>> q = Plan(n_vectors=10, block_size=4, seed=1, n_against=3)
    >>> q.n_blocks, q.block(1), q.block(2), q.tiles(), q.n_pairs
    (3, slice(4, 7, None), slice(7, 10, None), [(0, 2), (1, 2)], 21)
    >>> bool((q.permutation()[:7] < 7).all())
    True
    >>> a = Plan(n_vectors=12, block_size=4, seed=1, segments=(2,))
    >>> a.n_blocks, a.block(3), a.appended_tiles(), a.n_pairs
    (4, slice(10, 12, None), [(0, 3), (1, 3), (2, 3), (3, 3)], 66)
    >>> a.permutation()[:10].tolist() == Plan(10, 4, 1).permutation().tolist()
    True
    >>> g = Plan(n_vectors=12, block_size=4, seed=1, n_against=5, segments=(2,))
    >>> g.n_blocks, g.block(2), g.block(3), g.tiles(), g.appended_tiles(), g.n_pairs
    (4, slice(7, 10, None), slice(10, 12, None), [(0, 2), (0, 3), (1, 2), (1, 3)], [(0, 3), (1, 3)], 35)
    >>> g.permutation()[:10].tolist() == Plan(10, 4, 1, n_against=3).permutation().tolist()
    True
    """

    n_vectors: int
    block_size: int
    seed: int
    # keyword-only, so a subclass's own fields keep their positions (Plan3(n, block_size, seed, stages))
    n_input: int = field(default=0, kw_only=True)
    n_against: int = field(default=0, kw_only=True)
    # rows appended after the first part, one entry an append (each part permuted and blocked
    # within itself); () for a plan of one part
    segments: tuple[int, ...] = field(default=(), kw_only=True)

    def __post_init__(self):
        whole = self.n_against or self.n_vectors  # a query's segments are its FILE's
        if self.segments and (min(self.segments) < 1 or sum(self.segments) >= whole):
            raise ValueError(f"segments {self.segments} do not fit {whole} vectors")

    def parts(self) -> list[int]:
        """Rows of each part: the first (the vectors before any append), then each appended one;
        of a query plan's FILE part."""
        return [(self.n_against or self.n_vectors) - sum(self.segments), *self.segments]

    def _part_blocks(self) -> list[int]:
        return [max(1, -(-n // self.block_size)) for n in self.parts()]

    def part_of_block(self, index: int) -> int:
        """The part (0: the first; k: the k-th append) whose rows block `index` holds (0 in a
        plan with no append: a query plan's blocks are more than its one part's rows make).

        >>> Plan(9, 8, 0, n_against=3).part_of_block(1), Plan(12, 4, 0, segments=(4,)).part_of_block(2)
        (0, 1)
        """
        if not self.segments:
            return 0
        if self.n_against:  # the input's blocks are of no part; the FILE's parts after them
            if index < self.query_blocks:
                return 0
            index -= self.query_blocks
        ends = np.cumsum(self._part_blocks())
        return int(np.searchsorted(ends, index, side="right"))

    def appended_tiles(self) -> list[tuple[int, int]]:
        """The tiles with a block of the last appended part (every tile where nothing was appended)."""
        if not self.segments:
            return self.tiles()
        first = self.n_blocks - self._part_blocks()[-1]
        return [(i, j) for i, j in self.tiles() if j >= first]

    @property
    def n_query(self) -> int:
        """Vectors of the input part (all of them where this is no query plan)."""
        return self.n_vectors - self.n_against

    @property
    def query_blocks(self) -> int:
        """Blocks of the input part; a query plan's FILE blocks follow them."""
        return max(1, -(-self.n_query // self.block_size))

    @property
    def input_vectors(self) -> int:
        """Vectors of the input (the outputs' rows): n_input where duplicates were collapsed."""
        return self.n_input or self.n_vectors

    @property
    def n_blocks(self) -> int:
        if self.n_against:
            return self.query_blocks + sum(self._part_blocks())
        if self.segments:
            return sum(self._part_blocks())
        return max(1, -(-self.n_vectors // self.block_size))

    def block(self, index: int) -> slice:
        """Permuted rows of block `index`: [index * block_size, min((index + 1) * block_size, n));
        in a query plan the FILE's blocks start afresh at row n_query."""
        start, end = index * self.block_size, self.n_vectors
        if self.n_against and index < self.query_blocks:
            return slice(start, min(start + self.block_size, self.n_query))
        # a part's own blocks, from its first row on (a query's FILE parts after the input's rows)
        first_block, first_row = (self.query_blocks, self.n_query) if self.n_against else (0, 0)
        part = self.part_of_block(index)
        sizes, blocks = self.parts(), self._part_blocks()
        first_row += sum(sizes[:part])
        start = first_row + (index - first_block - sum(blocks[:part])) * self.block_size
        end = first_row + sizes[part]
        return slice(start, min(start + self.block_size, end))

    def tiles(self) -> list[tuple[int, int]]:
        """Every tile (I, J) with I <= J, row-major: one tile job each; a query plan's are
        (input block, FILE block) only."""
        if self.n_against:
            return [(i, j) for i in range(self.query_blocks) for j in range(self.query_blocks, self.n_blocks)]
        return [(i, j) for i in range(self.n_blocks) for j in range(i, self.n_blocks)]

    def permutation(self) -> np.ndarray:
        """int64 (n_vectors,): row r of the store holds vector permutation()[r] (numpy's default_rng(seed));
        a query plan permutes its input part and its FILE part each within itself."""
        rng = np.random.default_rng(self.seed)
        if not self.segments:
            if not self.n_against:
                return rng.permutation(self.n_vectors)
            return np.concatenate([rng.permutation(self.n_query), self.n_query + rng.permutation(self.n_against)])
        # the first part as a plan of it alone (a query's: the input's, then the FILE's first
        # part, as the earlier query plan permuted them); each appended one its own
        first = self.n_query if self.n_against else 0
        out = [rng.permutation(self.n_query)] if self.n_against else []
        sizes = self.parts()
        out.append(first + rng.permutation(sizes[0]))
        for k, n in enumerate(sizes[1:], start=1):
            out.append(first + sum(sizes[:k]) + np.random.default_rng([self.seed, k]).permutation(n))
        return np.concatenate(out)

    @property
    def n_pairs(self) -> int:
        """Unique pairs n (n - 1) / 2, or a query's n_query x n_against: each computed by exactly one tile."""
        if self.n_against:
            return self.n_query * self.n_against
        return self.n_vectors * (self.n_vectors - 1) // 2

    def describe(self) -> str:
        n_tiles = len(self.tiles())
        if self.n_against:
            grown = f" (the last {self.segments[-1]} appended)" if self.segments else ""
            return (
                f"query: {self.n_query} vectors against {self.n_against}{grown} in {self.n_blocks} block(s) of up "
                f"to {self.block_size}: {n_tiles} tile job(s), {self.n_pairs} cross pairs"
            )
        appended = f" (the last {self.segments[-1]} appended)" if self.segments else ""
        return (
            f"{self.n_vectors} vectors{appended} in {self.n_blocks} block(s) of up to {self.block_size}: "
            f"{n_tiles} tile job(s) (I <= J), {self.n_pairs} unique pairs"
        )

    def to_json(self) -> dict:
        """plan.json: the fields (n_input and n_against only where set) and the derived n_blocks, n_tiles, n_pairs."""
        d = {k: v for k, v in asdict(self).items() if k not in ("n_input", "n_against", "segments") or v}
        if self.segments:
            d["segments"] = list(self.segments)
        return {**d, "n_blocks": self.n_blocks, "n_tiles": len(self.tiles()), "n_pairs": self.n_pairs}

    @classmethod
    def from_json(cls, d: dict):
        """The plan a `to_json` dict describes (plan.json, a store manifest's "plan"); the
        derived keys are ignored, a field with a default may be missing.

        Examples
        --------
        >>> Plan.from_json(Plan(10, 4, 1).to_json())
        Plan(n_vectors=10, block_size=4, seed=1, n_input=0, n_against=0, segments=())
        """

        def value(name):
            return tuple(int(v) for v in d[name]) if name == "segments" else int(d[name])

        return cls(**{f.name: value(f.name) for f in fields(cls) if f.name in d or f.default is MISSING})
