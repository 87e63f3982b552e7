"""CPU backend: bit planes unpacked to float32 and multiplied by BLAS sgemm, exactly.

Generic over the Term lists of any metric (nothing here knows a metric):

1. Terms. Product terms of a count with the same (left, right) ranges are merged,
   and every left range is cut at every other left range's ends, so two terms'
   left ranges are equal or disjoint. Terms sharing a left range form a *group*:
   one left operand (the 0/1 bits of that range) against the signed integer
   combination sum(coef * plane) of their right ranges (e.g. ibs's L.V' - 2 L.L'
   is L.(V - 2L)'). K of a GEMM is the sum of its groups' widths, not of its terms'.
2. Radix. Counts are split into jobs of at most MAX_SLOTS counts, chosen to
   minimize the total K. The counts of a job ride in one float:
   right = Y_low + 2**s * Y_high, and one GEMM gives T = S_low + 2**s * S_high.
   (ibs: ibs_count and n in one GEMM of K = 3 planes instead of 7 products; king:
   nsnp + het_j over V, hethet + het_i over Het, ibs0: 4 planes instead of 6.)
3. Exactness. Left operands are 0/1, so every partial sum BLAS forms for pair
   (i, j), in any order, lies in [-N, P], where P (N) is the sum over the chunk of
   the positive (negative) coefficients times the set bits of row j's right planes.
   P and N are computed exactly from popcounts before each job, for every chunk
   and every row; the chunk width and the shift s are chosen so that every partial
   sum, and T + offset, stays within EXACT_LIMIT = 2**24, where float32 holds
   every integer. S_low + offset is in [0, 2**s), so S_high = floor((T + offset)
   / 2**s) exactly, per chunk; chunk sums are accumulated in float64 (exact below
   2**53) and split once at the end: S_low = sum T - 2**s * sum S_high.
4. Diagonal tiles (right is left): only the blocks of ROW_BLOCK rows on and right
   of the diagonal are multiplied (about 53% of the square at 16 blocks); the rest
   is filled by symmetry: a count whose terms are their own transpose is
   symmetric, two counts whose terms are each other's transpose (king's het_i and
   het_j) fill each other. A count with no such mirror is computed in full.
Each plane window is unpacked once per chunk and shared by every group that uses it.
"""

import itertools
import math
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from genotile.backends.cpu.numpy_popcount import _product
from genotile.backends.terms import add_row_sums, is_diagonal
from genotile.core.bits import WORD_BITS
from genotile.util.cpus import usable_cpus

EXACT_LIMIT = 2**24  # float32 holds every integer of magnitude <= 2**24
CHUNK_WORDS = 256  # words of K per GEMM at most (16,384 fields); also bounded by CHUNK_BYTES
CHUNK_BYTES = 1 << 27  # bytes of one float32 operand of a chunk
MAX_SLOTS = 2  # counts per GEMM
RADIX_PENALTY = 0.1  # a job of several counts must save at least this fraction of K
MIN_RADIX_WORDS = 16  # a radix job whose chunks would be narrower is split into single counts
ROW_BLOCK = 128  # rows per block on a diagonal tile (at least; at most DIAGONAL_BLOCKS blocks)
DIAGONAL_BLOCKS = 16
THREADS = 8  # threads for unpacking and decoding (at most the CPUs this process may use)
MIN_THREAD_ROWS = 64  # rows per thread at least
MACS = [0]  # float multiply-adds issued, for benchmarks (bench/bench_genotype.py)
GRANULES = 4096  # popcount prefix sums per range at most (the chunk width is a multiple of one)


def is_available() -> bool:
    return True


# ---------------------------------------------------------------- planning


def _normalize(terms) -> dict:
    """{(left range, right range): coef} of the product terms, merged, zeros dropped."""
    merged: dict = defaultdict(int)
    for t in terms:
        if t.left is not None and t.right is not None and t.left[1] > t.left[0] and t.coef:
            merged[(tuple(t.left), tuple(t.right))] += t.coef
    return {k: v for k, v in merged.items() if v}


def _transpose(prods: dict) -> dict:
    return {(r, left): c for (left, r), c in prods.items()}


def _split(prods: dict, cuts: list[int]) -> dict:
    """Cut each left range at the given word offsets (right ranges follow)."""
    out: dict = defaultdict(int)
    for ((l0, l1), (r0, _)), coef in prods.items():
        edges = [l0, *[c for c in cuts if l0 < c < l1], l1]
        for a, b in itertools.pairwise(edges):
            out[((a, b), (r0 + a - l0, r0 + b - l0))] += coef
    return {k: v for k, v in out.items() if v}


@dataclass(frozen=True)
class _Job:
    names: tuple[str, ...]
    # groups: ((left range, ((count index in names, coef, right start), ...)), ...)
    groups: tuple

    @property
    def words(self) -> int:
        return sum(b - a for (a, b), _ in self.groups)


def _job(names, split_prods: dict) -> _Job:
    groups: dict = defaultdict(list)
    for k, name in enumerate(names):
        for (lr, (r0, _)), coef in sorted(split_prods[name].items()):
            groups[lr].append((k, coef, r0))
    return _Job(tuple(names), tuple((lr, tuple(ts)) for lr, ts in sorted(groups.items())))


def _partition(names: list[str], split_prods: dict) -> list[_Job]:
    """Jobs of at most MAX_SLOTS counts that minimize the total K (exhaustive; few counts)."""
    single = {n: _job([n], split_prods).words for n in names}
    if MAX_SLOTS < 2 or len(names) > 10:
        return [_job([n], split_prods) for n in names]
    pair_cost = {}
    for a, b in itertools.combinations(names, 2):
        w = _job([a, b], split_prods).words * (1 + RADIX_PENALTY)
        if w < single[a] + single[b]:
            pair_cost[a, b] = w
    best: list = [math.inf, None]

    def search(rest, chosen, cost):
        if cost >= best[0]:
            return
        if not rest:
            best[:] = [cost, list(chosen)]
            return
        first, others = rest[0], rest[1:]
        for other in others:
            if (first, other) in pair_cost:
                search([n for n in others if n != other], [*chosen, (first, other)], cost + pair_cost[first, other])
        search(others, [*chosen, (first,)], cost + single[first])

    search(list(names), [], 0.0)
    return [_job(list(j), split_prods) for j in best[1]]


@dataclass(frozen=True)
class _Plan:
    jobs: tuple[_Job, ...]
    mirror: dict  # count -> the count whose transpose it is (itself when symmetric), or None


def _make_plan(counts: dict) -> _Plan:
    prods = {name: _normalize(terms) for name, terms in counts.items()}
    names = [n for n in counts if prods[n]]
    cuts = sorted({e for p in prods.values() for (lr, _) in p for e in lr})
    split_prods = {n: _split(prods[n], cuts) for n in names}
    mirror = {}
    for n in names:
        t = _transpose(prods[n])
        mirror[n] = next((m for m in ([n] + names) if prods[m] == t), None)
    return _Plan(tuple(_partition(names, split_prods)), mirror)


_PLANS: dict = {}


def _plan(counts: dict) -> _Plan:
    key = (MAX_SLOTS, RADIX_PENALTY, tuple((name, tuple(terms)) for name, terms in counts.items()))
    if key not in _PLANS:
        if len(_PLANS) > 64:
            _PLANS.clear()
        _PLANS[key] = _make_plan(counts)
    return _PLANS[key]


# ---------------------------------------------------------------- exact bounds


class _Popcounts:
    """Prefix sums over granules of a plane range's per-row popcounts (for chunk bounds)."""

    def __init__(self, words: np.ndarray):
        self.words = words
        self.cache: dict = {}

    def prefix(self, r0: int, width: int, granule: int) -> np.ndarray:
        """(rows, granules + 1) int64: per-row set bits of words r0 .. r0 + width, cumulated by granule."""
        key = (r0, width, granule)
        if key not in self.cache:
            pc = np.bitwise_count(self.words[:, r0 : r0 + width])
            rows, full = pc.shape[0], width - width % granule
            if granule > 1:
                sums = pc[:, :full].reshape(rows, -1, granule).sum(axis=2, dtype=np.int64)
                if full < width:
                    sums = np.concatenate([sums, pc[:, full:].sum(axis=1, dtype=np.int64)[:, None]], axis=1)
            else:
                sums = pc
            out = np.zeros((rows, sums.shape[1] + 1), dtype=np.int64)
            np.cumsum(sums, axis=1, dtype=np.int64, out=out[:, 1:])
            self.cache[key] = out
        return self.cache[key]


def _granule(job: _Job) -> int:
    return max(1, -(-max(b - a for (a, b), _ in job.groups) // GRANULES))


def _slot_bounds(job: _Job, pops: _Popcounts, cw: int, granule: int) -> np.ndarray:
    """(slots, 2): max over chunks and rows of P and N (see the module docstring) at chunk width cw."""
    n_chunks = -(-max(b - a for (a, b), _ in job.groups) // cw)
    rows = pops.words.shape[0]
    pn = np.zeros((len(job.names), 2, rows, n_chunks), dtype=np.int64)
    step = cw // granule
    for (l0, l1), terms in job.groups:
        width = l1 - l0
        n_g = -(-width // granule)
        starts = np.arange(0, n_g, step)
        ends = np.minimum(starts + step, n_g)
        for k, coef, r0 in terms:
            pre = pops.prefix(r0, width, granule)
            pn[k, 0 if coef > 0 else 1, :, : starts.size] += abs(coef) * (pre[:, ends] - pre[:, starts])
    return pn.max(axis=(2, 3)) if rows else np.zeros((len(job.names), 2), dtype=np.int64)


def _fit(bounds: np.ndarray, limit: int):
    """(need, (order, shift, offset)) for the slots' bounds; feasible when need <= limit."""
    if len(bounds) == 1:
        return int(bounds[0].max()), ((0,), 0, 0)
    best = None
    for lo, hi in ((0, 1), (1, 0)):
        (p_lo, n_lo), (p_hi, n_hi) = (int(x) for x in bounds[lo]), (int(x) for x in bounds[hi])
        shift = (p_lo + n_lo).bit_length()
        need = max(p_lo + n_lo + (p_hi << shift), n_lo + (n_hi << shift))
        if best is None or need < best[0]:
            best = (need, ((lo, hi), shift, n_lo))
    return best


def _choose_width(job: _Job, pops: _Popcounts, cw_max: int, limit: int):
    """The widest chunk (words per group, a multiple of the granule) whose bounds fit, or None."""
    granule = _granule(job)
    cw = max(granule, cw_max - cw_max % granule)
    for _ in range(12):
        need, fit = _fit(_slot_bounds(job, pops, cw, granule), limit)
        if need <= limit:
            return cw, fit
        if cw == granule:
            return None
        # bounds grow about linearly with the width, the radix need about quadratically
        shrink = (limit / need) ** (0.5 if len(job.names) > 1 else 1.0)
        cw = max(granule, min(cw - granule, int(cw * shrink * 0.95)) // granule * granule)
    return None


# ---------------------------------------------------------------- execution


def _unpack(words: np.ndarray, start: int, stop: int) -> np.ndarray:
    """uint8 0/1 array (rows, (stop - start) * 64) of a word window."""
    return np.unpackbits(words[:, start:stop].view(np.uint8), axis=1, bitorder="little")


_POOL: list = []


def _threads() -> int:
    return usable_cpus(THREADS)


def _by_rows(fn, n: int) -> None:
    """fn(r0, r1) over row ranges covering 0..n, on the thread pool (numpy releases the GIL)."""
    parts = min(_threads(), n // MIN_THREAD_ROWS)
    if parts <= 1:
        fn(0, n)
        return
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(_threads(), thread_name_prefix="genotile-blas"))
    edges = [n * k // parts for k in range(parts + 1)]
    for f in [_POOL[0].submit(fn, edges[k], edges[k + 1]) for k in range(parts)]:
        f.result()


def _combine(dst: np.ndarray, planes: list[tuple[np.ndarray, float]]) -> None:
    """dst = sum(coef * plane) in float32, planes uint8 0/1, integer coefs.

    Summed in the narrowest integer type that holds every value (int8 or int16: a
    quarter or half the memory traffic of float32), then converted once.
    """
    total = sum(abs(c) for _, c in planes)
    if not planes:
        dst[...] = 0
        return
    if len(planes) == 1 and planes[0][1] == 1:
        np.copyto(dst, planes[0][0])
        return
    dtype = np.int8 if total <= 127 else np.int16 if total <= 32767 else None
    if dtype is None:  # (not reached by the metrics here: the radix shifts stay below 2**14)
        np.multiply(planes[0][0], np.float32(planes[0][1]), out=dst)
        for plane, coef in planes[1:]:
            dst += np.multiply(plane, np.float32(coef), dtype=np.float32)
        return
    acc = np.multiply(planes[0][0], dtype(int(planes[0][1])), dtype=dtype)
    for plane, coef in planes[1:]:
        if coef == 1:
            np.add(acc, plane, out=acc, casting="unsafe")
        elif coef == -1:
            np.subtract(acc, plane, out=acc, casting="unsafe")
        else:
            acc += np.multiply(plane, dtype(int(coef)), dtype=dtype)
    np.copyto(dst, acc)


def _run_job(job: _Job, left, right, diagonal: bool, upper: bool, pops: _Popcounts, limit: int, out: dict):
    n_i, n_j = left.shape[0], right.shape[0]
    cw_max = max(1, min(CHUNK_WORDS, CHUNK_BYTES // (4 * WORD_BITS * max(n_i, n_j, 1))) // len(job.groups))
    chosen = _choose_width(job, pops, cw_max, limit)
    if chosen is None and len(job.names) == 1:  # coefficients too large for any float32 chunk
        out[job.names[0]] = _popcount_job(job, left, right)
        return
    if chosen is None or (len(job.names) > 1 and chosen[0] < min(MIN_RADIX_WORDS, cw_max)):
        for single in _singles(job):  # the radix does not fit (well): one count per GEMM
            _run_job(single, left, right, diagonal, upper, pops, limit, out)
        return
    cw, (order, shift, offset) = chosen
    weight = {order[0]: 1.0, **({order[1]: float(2**shift)} if len(order) > 1 else {})}
    # per group: left range and the right operand as {right start: coef * slot weight}
    groups = []
    for (l0, l1), terms in job.groups:
        coefs: dict = defaultdict(float)
        for k, coef, r0 in terms:
            coefs[r0] += coef * weight[k]
        groups.append((l0, l1, [(r0, c) for r0, c in coefs.items() if c]))
    k_max = sum(min(cw, l1 - l0) for l0, l1, _ in groups) * WORD_BITS
    x_buf = np.empty((n_i, k_max), dtype=np.float32)
    y_buf = np.empty((n_j, k_max), dtype=np.float32)
    acc_all = np.zeros((n_i, n_j), dtype=np.float64)
    acc_hi = np.zeros((n_i, n_j), dtype=np.float64) if len(order) > 1 else None
    t_buf = np.empty((min(n_i, _row_block(n_i)) if upper else n_i, n_j), dtype=np.float32)
    inv, off = np.float32(2.0**-shift), np.float32(offset)

    for a in range(0, max(l1 - l0 for l0, l1, _ in groups), cw):
        pieces, k0 = [], 0  # (k0, k1, l0, l1, right starts and coefs) of the groups this chunk reaches
        for l0, l1, rs in groups:
            if a < l1 - l0:
                w = min(cw, l1 - l0 - a)
                pieces.append((k0, k0 + w * WORD_BITS, l0 + a, l0 + a + w, [(r0 + a, c) for r0, c in rs]))
                k0 += w * WORD_BITS

        def fill(words, buf, side, r0, r1, cache, pieces=pieces):
            rows = words[r0:r1]
            for k0_, k1_, s0, s1, rs in pieces:

                def bits(start, width=s1 - s0):
                    if (start, width) not in cache:
                        cache[start, width] = _unpack(rows, start, start + width)
                    return cache[start, width]

                if side == "x":
                    np.copyto(buf[r0:r1, k0_:k1_], bits(s0))
                else:
                    _combine(buf[r0:r1, k0_:k1_], [(bits(r), c) for r, c in rs])

        if diagonal:

            def fill_both(r0, r1):
                cache: dict = {}
                fill(left, x_buf, "x", r0, r1, cache)
                fill(left, y_buf, "y", r0, r1, cache)

            _by_rows(fill_both, n_i)
        else:
            _by_rows(lambda r0, r1: fill(left, x_buf, "x", r0, r1, {}), n_i)
            _by_rows(lambda r0, r1: fill(right, y_buf, "y", r0, r1, {}), n_j)
        x, y = x_buf[:, :k0], y_buf[:, :k0]
        for i0, i1, j0 in _blocks(n_i, upper):
            t = t_buf[: i1 - i0, : n_j - j0]
            np.matmul(x[i0:i1], y[j0:].T, out=t)
            MACS[0] += (i1 - i0) * (n_j - j0) * x.shape[1]

            def decode(r0, r1, t=t, i0=i0, j0=j0):
                tt = t[r0:r1]
                acc_all[i0 + r0 : i0 + r1, j0:] += tt
                if acc_hi is not None:  # S_high = floor((T + offset) / 2**shift)
                    h = tt + off if offset else tt.copy()
                    h *= inv
                    np.floor(h, out=h)
                    acc_hi[i0 + r0 : i0 + r1, j0:] += h

            _by_rows(decode, i1 - i0)
    if acc_hi is None:
        out[job.names[0]] = acc_all
    else:
        lo, hi = order
        acc_all -= float(2**shift) * acc_hi
        out[job.names[lo]], out[job.names[hi]] = acc_all, acc_hi


def _singles(job: _Job) -> list[_Job]:
    """The job as one job per count."""
    return [
        _Job(
            (name,),
            tuple(
                (lr, tuple((0, c, r0) for k, c, r0 in ts if k == slot))
                for lr, ts in job.groups
                if any(k == slot for k, _, _ in ts)
            ),
        )
        for slot, name in enumerate(job.names)
    ]


def _popcount_job(job: _Job, left, right) -> np.ndarray:
    """A one-count job by AND + popcount in int64 (no float32 chunk can hold its terms exactly)."""
    acc = np.zeros((left.shape[0], right.shape[0]), dtype=np.int64)
    for (l0, l1), terms in job.groups:
        for _, coef, r0 in terms:
            acc += coef * _product(left[:, l0:l1], right[:, r0 : r0 + l1 - l0])
    return acc


def _row_block(n: int) -> int:
    return max(ROW_BLOCK, -(-n // DIAGONAL_BLOCKS))


def _blocks(n: int, upper: bool):
    """(i0, i1, j0): row blocks and the first column each multiplies (all columns unless upper)."""
    if not upper:
        yield 0, n, 0
        return
    rb = _row_block(n)
    for i0 in range(0, n, rb):
        yield i0, min(n, i0 + rb), i0


def count_matrices(left: np.ndarray, right: np.ndarray, counts: dict) -> dict[str, np.ndarray]:
    n_i = left.shape[0]
    diagonal = is_diagonal(left, right)
    left = np.ascontiguousarray(left)
    right = left if diagonal else np.ascontiguousarray(right)
    plan = _plan(counts)
    result: dict = {}
    upper_names: set = set()
    pops = _Popcounts(right)
    for job in plan.jobs:
        # on a diagonal tile, blocks right of the diagonal only, when every count of the job has a mirror
        upper = diagonal and n_i > _row_block(n_i) and all(plan.mirror[n] is not None for n in job.names)
        products: dict = {}
        _run_job(job, left, right, diagonal, upper, pops, EXACT_LIMIT, products)
        for name, acc in products.items():
            result[name] = acc.astype(np.int64)  # exact integers in float64
        if upper:
            upper_names.update(job.names)
    # fill the blocks left of the diagonal from the mirror's blocks right of it
    for name in upper_names:
        src = result[plan.mirror[name]] if plan.mirror[name] != name else None
        for i0, i1, _ in _blocks(n_i, True):
            if src is None:
                result[name][i1:, i0:i1] = result[name][i0:i1, i1:].T
            else:
                result[name][i1:, i0:i1] = src[i0:i1, i1:].T
    return add_row_sums(result, left, right, counts)
