"""How many CPUs this process may use (its affinity mask: what Snakemake, SLURM or taskset gave it)."""

import os


def usable_cpus(at_most: int | None = None) -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity (macOS)
        n = os.cpu_count() or 1
    return max(1, n if at_most is None else min(at_most, n))
