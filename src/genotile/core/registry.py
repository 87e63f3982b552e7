"""Every metric the workflow knows, 2-way (metrics.METRICS) and 3-way (ccc3.FACTS), by name.

The facts about a metric live on its definition (metrics.MetricFacts); the rules, the CLI, the
report and config/schema/config.schema.yaml (checked by tests/core/test_registry.py) read them
from here.
"""

from genotile.core import ccc3
from genotile.core.metrics import METRICS, MetricFacts

REGISTRY: dict[str, MetricFacts] = {**METRICS, ccc3.NAME: ccc3.FACTS}


def config_params(name: str, config: dict) -> dict:
    """The epilogue parameters of metric `name` from a workflow config ({} for one without).

    Parameters
    ----------
    name : str
        A metric of REGISTRY.
    config : dict
        The workflow config (after schema validation: its sections carry their defaults).

    Returns
    -------
    dict
        {parameter: value}, e.g. ccc2's {"multiplier": 4.5, "param": 0.667}.
    """
    section = REGISTRY[name].params_section
    return dict(config.get(section) or {}) if section else {}
