"""The tile plan: a seeded permutation of the vectors, blocks, and unique tiles.

Vectors are permuted once (so dense and sparse regions spread over all tiles),
then cut into blocks of `block_size` consecutive permuted rows. Tile (I, J)
with I <= J compares block I with block J; a diagonal tile counts each pair once.
"""

import json
from dataclasses import asdict, dataclass

import numpy as np

from genotile.io.atomic import atomic_path, write_text


@dataclass(frozen=True)
class Plan:
    n_vectors: int
    block_size: int
    seed: int

    @property
    def n_blocks(self) -> int:
        return max(1, -(-self.n_vectors // self.block_size))

    def block(self, index: int) -> slice:
        start = index * self.block_size
        return slice(start, min(start + self.block_size, self.n_vectors))

    def tiles(self) -> list[tuple[int, int]]:
        return [(i, j) for i in range(self.n_blocks) for j in range(i, self.n_blocks)]

    def permutation(self) -> np.ndarray:
        return np.random.default_rng(self.seed).permutation(self.n_vectors)

    @property
    def n_pairs(self) -> int:
        return self.n_vectors * (self.n_vectors - 1) // 2

    def describe(self) -> str:
        n_tiles = len(self.tiles())
        return (
            f"{self.n_vectors} vectors in {self.n_blocks} block(s) of up to {self.block_size}: "
            f"{n_tiles} tile job(s) (I <= J), {self.n_pairs} unique pairs"
        )

    def to_json(self) -> dict:
        return {**asdict(self), "n_blocks": self.n_blocks, "n_tiles": len(self.tiles()), "n_pairs": self.n_pairs}


def write_plan(plan: Plan, plan_out, perm_out) -> None:
    with atomic_path(perm_out) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, plan.permutation(), allow_pickle=False)
    write_text(plan_out, json.dumps(plan.to_json(), indent=1) + "\n")


def read_plan(plan_path) -> Plan:
    from genotile.io.readback import load_json

    d = load_json(plan_path, "plan", ("n_vectors", "block_size", "seed"))
    return Plan(d["n_vectors"], d["block_size"], d["seed"])
