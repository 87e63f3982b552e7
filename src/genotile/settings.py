"""What each stage is run with, built once from a workflow config: the one pipeline description.

`config` is the workflow's config dict: the shape of config/config.yaml once the schema has filled
its defaults. The rules' params (rules/common.smk), the store job's early tiles
(scripts/store.py) and `genotile run` (pipeline.py, which builds a config of this shape from its
arguments) all take their settings from here, so that a tile job adopts the store job's tile
(pairs/early.py) and a summary records the same settings whichever ran it.
"""

from genotile.core import ccc3
from genotile.core.blocks import gpu_tiles, visible_gpu_count
from genotile.core.metrics import get_metric
from genotile.core.plan import Plan
from genotile.core.registry import REGISTRY, config_params
from genotile.io.peer_formats import DATASET_KEYS


def dense_wanted(config: dict, plan: Plan) -> bool:
    """Whether tiles keep their dense block (matrix.tsv): input vectors (where identical ones were
    collapsed, the plan tiles fewer) up to `dense_max`."""
    return plan.input_vectors <= config["dense_max"]


def tile_settings(config: dict, metric: str, plan: Plan) -> dict:
    """A 2-way tile's settings: pairs/stage.tile's keyword arguments besides its files and blocks.

    The tile rule's params (rules/tiles.smk), what the store job computes its early tiles with
    and records (pairs/early.py: a tile job adopts a tile recorded with every one of its params,
    with these values) and what `genotile run` computes its tiles with.

    Parameters
    ----------
    config : dict
        The workflow config.
    metric : str
        A 2-way metric.
    plan : Plan
        The store's plan (its input vectors decide the dense block).

    Returns
    -------
    dict
        {threshold, dense, backend, metric_params}.
    """
    return {
        "threshold": config["thresholds"].get(metric),
        "dense": dense_wanted(config, plan),
        "backend": config["backend"],
        "metric_params": config_params(metric, config),
    }


def ccc3_plan_settings(config: dict, gpus: int | None = None) -> tuple[int | str, int]:
    """(block_size, stages) of ccc3 jobs: `ccc3:` in the config, block_size defaulting to the
    2-way one; where that is auto, ccc3.CPU_BLOCK_SIZE for jobs on the CPU, and for jobs on a GPU
    (core/blocks.gpu_tiles) "auto": the store's planes decide it (triples/stage.ccc3_block_size:
    ccc3.GPU_BLOCK_SIZE where the fused kernel holds them, else ccc3.CPU_BLOCK_SIZE, the same in every
    process that reads the store), and its stages then default to one a GPU this host lets
    the run use (core/blocks.visible_gpu_count; `gpus` where given: `genotile plan --gpus`), so
    that every GPU takes a share; else 1.

    >>> ccc3_plan_settings({"block_size": 1000, "backend": "numba"})
    (1000, 1)
    >>> ccc3_plan_settings({"block_size": "auto", "backend": "numpy", "ccc3": {"stages": 3}})
    (4096, 3)
    >>> ccc3_plan_settings({"block_size": "auto"}, gpus=2)
    ('auto', 2)
    """
    c = config.get("ccc3") or {}
    on_gpu = gpu_tiles(config.get("backend", "auto")) if gpus is None else gpus > 0
    gpu = config["block_size"] == "auto" and not c.get("block_size") and on_gpu
    if config["block_size"] != "auto":
        two_way = config["block_size"]
    else:  # `block_size: auto` sizes 2-way tiles; ccc3's are fixed, or on a GPU resolved by the store
        two_way = "auto" if gpu else ccc3.CPU_BLOCK_SIZE
    stages = c.get("stages") or (max(1, visible_gpu_count() if gpus is None else gpus) if gpu else 1)
    return c.get("block_size") or two_way, stages


def triple_settings(config: dict, gpus: int | None = None) -> dict:
    """A ccc3 job's settings: triples/stage.triple_job's keyword arguments besides its files, job
    and output (the triples rule's params; `params` its `ccc` param).

    Returns
    -------
    dict
        {threshold, block_size, stages, null_max, backend, params}.
    """
    block_size, stages = ccc3_plan_settings(config, gpus)
    return {
        "threshold": config["thresholds"].get(ccc3.NAME),
        "block_size": block_size,
        "stages": stages,
        "null_max": ccc3_null_max(config),
        "backend": config["backend"],
        "params": config_params(ccc3.NAME, config),
    }


def ccc3_null_max(config: dict) -> int:
    """SNPs past which a null ccc3 threshold is refused (`ccc3: null_threshold_max`)."""
    return (config.get("ccc3") or {}).get("null_threshold_max", ccc3.NULL_THRESHOLD_MAX)


def summary_config(config: dict, metric: str, dataset: str | None = None, gpus: int | None = None) -> dict:
    """The settings a metric's summary.json records under `config` (and its merge checks its
    tiles against: threshold, params).

    Parameters
    ----------
    config : dict
        The workflow config.
    metric : str
        A metric (2-way, or ccc3).
    dataset : str, optional
        The workflow's dataset: recorded with its own settings (input, reader options), not its
        metric list or opt-in outputs (adding a metric or a format reruns no merge). None for
        `genotile run`, which has no dataset and records the settings it was given, in the
        order it always has.
    gpus : int, optional
        As `ccc3_plan_settings` (the workflow's: 0 where its jobs run on a cluster).

    Returns
    -------
    dict
    """
    triples = REGISTRY[metric].workload == "triples"
    threshold = config["thresholds"].get(metric)
    if dataset is None:
        if triples:
            block_size, stages = ccc3_plan_settings(config)
            return {
                "threshold": threshold,
                "block_size": block_size,
                "stages": stages,
                "backend": config["backend"],
                "params": config_params(metric, config),
            }
        return {
            "threshold": threshold,
            **{k: config[k] for k in ("block_size", "seed", "dense_max", "backend")},
            "params": get_metric(metric, **config_params(metric, config)).params,
        }
    spec = config["datasets"][dataset]
    if triples:
        block_size, stages = ccc3_plan_settings(config, gpus)
        return {
            "dataset": dataset,
            **{k: v for k, v in spec.items() if k != "metrics"},
            "threshold": threshold,
            "params": config_params(metric, config),
            "ccc3": {"block_size": block_size, "stages": stages},
            **{k: config[k] for k in ("seed", "backend")},
        }
    return {
        "dataset": dataset,
        **{k: v for k, v in spec.items() if k != "metrics" and k not in DATASET_KEYS},
        "threshold": threshold,
        "params": config_params(metric, config),
        **{k: config[k] for k in ("block_size", "dense_max", "seed", "backend")},
    }
