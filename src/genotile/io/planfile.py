"""A tile plan's files: plan.json and perm.npy (core/plan.py holds the Plan itself, no file I/O)."""

import json

import numpy as np

from genotile.core.plan import Plan
from genotile.util.atomic import atomic_path, write_text
from genotile.util.readback import load_json


def write_plan(plan: Plan, plan_out, perm_out) -> None:
    """Write plan.json and perm.npy (int64, shape (n_vectors,)), each atomically.

    Parameters
    ----------
    plan : Plan
        The plan to record.
    plan_out, perm_out : str or os.PathLike
        Paths of plan.json and perm.npy.
    """
    with atomic_path(perm_out) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, plan.permutation(), allow_pickle=False)
    write_text(plan_out, json.dumps(plan.to_json(), indent=1) + "\n")


def read_plan(plan_path) -> Plan:
    """The Plan of a plan.json, refused by name (GenotileError) when damaged or incomplete.

    Parameters
    ----------
    plan_path : str or os.PathLike
        A plan.json written by `write_plan`.

    Returns
    -------
    Plan
    """
    return Plan.from_json(load_json(plan_path, "plan", ("n_vectors", "block_size", "seed")))
