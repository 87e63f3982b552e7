"""The tile plan (core/plan.py): a query plan grown by its FILE's segments."""

import numpy as np

from genotile.core.plan import Plan


def test_a_grown_query_plan_keeps_the_earlier_blocks_and_covers_every_cross_pair_once():
    """A query plan whose FILE part grew by segments (store/query_append.py): every cross pair in
    exactly one tile, the earlier plan's permutation, blocks and tiles kept, the new ones its
    appended_tiles."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n_query, r0, block = int(rng.integers(1, 30)), int(rng.integers(1, 30)), int(rng.integers(1, 9))
        segments = tuple(int(x) for x in rng.integers(1, 10, size=int(rng.integers(1, 3))))
        r = r0 + sum(segments)
        p = Plan(n_query + r, block, 3, n_against=r, segments=segments)
        pairs = set()
        for i, j in p.tiles():
            bi, bj = p.block(i), p.block(j)
            assert bi.stop <= n_query <= bj.start
            pairs.update((a, b) for a in range(bi.start, bi.stop) for b in range(bj.start, bj.stop))
        assert len(pairs) == n_query * r == p.n_pairs
        earlier_r = r0 + sum(segments[:-1])
        old = Plan(n_query + earlier_r, block, 3, n_against=earlier_r, segments=segments[:-1])
        assert np.array_equal(p.permutation()[: old.n_vectors], old.permutation())
        assert all(p.block(b) == old.block(b) for b in range(old.n_blocks))
        assert [t for t in p.tiles() if t not in old.tiles()] == p.appended_tiles()
