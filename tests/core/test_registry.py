"""Every fact about a metric has one home (core/registry.py) and every other place agrees with it:
the config schema's metric enum, core/rates.py, the report rules, the fused GPU epilogues of
kernels/epilogues/*.cuh and the histogram binning."""

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from genotile.backends.cuda.tile_select import KEEP_IDS, fused_spec
from genotile.core import ccc3
from genotile.core.metrics import METRICS, Metric
from genotile.core.rates import TILES
from genotile.core.registry import REGISTRY, config_params
from genotile.pairs.estimate import layout_for

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"
EPILOGUES = REPO / "src" / "genotile" / "backends" / "cuda" / "kernels" / "epilogues"
PAIRS = [m for m in REGISTRY.values() if m.workload == "pairs"]


def load_schema() -> dict:
    with open(SCHEMA) as fh:
        return yaml.safe_load(fh)


def walk(node, path=()):
    """(path, node) of every dict in a loaded YAML tree."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from walk(value, (*path, key))
    elif isinstance(node, list):
        for k, value in enumerate(node):
            yield from walk(value, (*path, k))


def test_registry_holds_every_metric_once():
    assert list(REGISTRY) == [*METRICS, ccc3.NAME]
    assert all(name == facts.name for name, facts in REGISTRY.items())
    assert {m.workload for m in REGISTRY.values()} == {"pairs", "triples"}


def test_schema_metric_enum_is_the_registry():
    schema = load_schema()
    assert schema["$defs"]["metric"]["enum"] == list(REGISTRY)
    # the metric lists of the schema refer to that one enum; no other enum names a metric
    datasets = schema["properties"]["datasets"]["additionalProperties"]["properties"]
    assert datasets["metrics"]["items"] == {"$ref": "#/$defs/metric"}
    assert schema["properties"]["thresholds"]["propertyNames"] == {"$ref": "#/$defs/metric"}
    copies = [
        path for path, node in walk(schema) if path != ("$defs", "metric") and set(node.get("enum", ())) & set(REGISTRY)
    ]
    assert copies == []


def test_schema_accepts_every_registered_metric_and_refuses_others():
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    for name in REGISTRY:
        config = {"datasets": {"d": {"input": "in.vcf", "metrics": [name]}}, "thresholds": {name: 1}}
        validate(config, str(SCHEMA))
        assert config["thresholds"] == {name: 1}
    for bad in (
        {"datasets": {"d": {"input": "in.vcf", "metrics": ["nope"]}}},
        {"datasets": {"d": {"input": "in.vcf", "metrics": ["snp"]}}, "thresholds": {"nope": 1}},
    ):
        with pytest.raises(WorkflowError):
            validate(bad, str(SCHEMA))


def value_dtypes(metric: Metric, missing: bool) -> dict:
    counts = metric.counts(layout_for(metric, 100, missing))
    with np.errstate(all="ignore"):
        values = metric.epilogue({name: np.ones((2, 2), dtype=np.int64) for name in counts})
    return {c: np.asarray(values[c]).dtype for c in metric.columns}


@pytest.mark.parametrize("metric", PAIRS, ids=lambda m: m.name)
def test_every_pairs_metric_has_every_fact(metric):
    assert isinstance(metric, Metric)
    assert metric.columns and metric.dense_column in metric.columns
    # histograms: columns of the metric; a float column has bins, an integer one is a bincount
    assert metric.histogram_columns and set(metric.histogram_columns) <= set(metric.columns)
    assert set(metric.float_bins) <= set(metric.histogram_columns)
    for missing in (True, False):
        dtypes = value_dtypes(metric, missing)
        for column in metric.histogram_columns:
            is_float = dtypes[column] == np.float64
            assert is_float == (column in metric.float_bins), (column, dtypes[column])
            assert is_float or dtypes[column] == np.int64
    for low, high, bins in metric.float_bins.values():
        assert low < high and isinstance(bins, int) and bins > 0
    # a measured rate on every backend of core/rates.py
    assert metric.rate_key is not None
    for backend, table in TILES.items():
        assert metric.rate_key in table, (backend, metric.rate_key)
    # a fused GPU epilogue
    assert metric.fused_id is not None
    # report pieces: each made by a rule of rules/report.smk
    report_rules = (REPO / "rules" / "report.smk").read_text()
    for name in metric.report_files:
        assert f'"results/{{dataset}}/{metric.name}/report/{name}"' in report_rules, name


def test_triples_metric_facts():
    facts = REGISTRY[ccc3.NAME]
    assert facts is ccc3.FACTS and facts.workload == "triples"
    assert facts.columns == ccc3.COLUMNS and facts.encoding == "genotype_t"
    # no fused 2-way kernel, measured rate, histogram or report plot: the workflow makes none
    assert (facts.fused_id, facts.rate_key, facts.histogram_columns, facts.report_files) == (None, None, (), ())


def test_rates_hold_only_registered_rate_keys():
    keys = {m.rate_key for m in REGISTRY.values() if m.rate_key is not None}
    for backend, table in TILES.items():
        assert set(table) == keys, backend


def test_config_params_come_from_the_metric_section():
    schema = load_schema()
    config = {"ccc": {"multiplier": 3.0, "param": 0.5}}
    for name, facts in REGISTRY.items():
        if facts.params_section is None:
            assert config_params(name, config) == {}
        else:
            assert facts.params_section in schema["properties"]
            assert config_params(name, config) == config[facts.params_section]
    assert config_params("ccc2", config) == {"multiplier": 3.0, "param": 0.5}
    assert config_params("snp", config) == {}


def kernel_epilogues() -> dict[int, dict]:
    """The fused epilogues, one header each under kernels/epilogues/: fused_id -> n_counts, n_cols,
    keep, and the metric, count and column names its first line documents."""
    keep_ids = {f"KEEP_{rule.upper()}": k for rule, k in KEEP_IDS.items()}
    out = {}
    for header in sorted(EPILOGUES.glob("*.cuh")):
        text = header.read_text()
        first = re.match(r"// fused_id (\d+), ([\w /]+): counts \(([^)]*)\) -> columns \(([^)]*)\)", text)
        if first is None:  # epilogue.cuh: what every epilogue shares
            continue
        body = re.search(
            r"struct Epilogue<(\d+)>.*?n_counts = (\d+);.*?n_cols = (\d+);.*?keep = (KEEP_\w+);", text, re.S
        )
        assert body is not None and body.group(1) == first.group(1), header.name
        out[int(first.group(1))] = {
            "counts": int(body.group(2)),
            "cols": int(body.group(3)),
            "keep": keep_ids[body.group(4)],
            "names": tuple(n.strip() for n in first.group(2).split("/")),
            "count_names": tuple(n.strip() for n in first.group(3).split(",")),
            "column_names": tuple(n.strip() for n in first.group(4).split(",")),
        }
    return out


def test_fused_ids_match_the_kernel_epilogues():
    kernel = kernel_epilogues()
    assert sorted(kernel) == sorted({m.fused_id for m in PAIRS if m.fused_id is not None})
    for metric in PAIRS:
        epilogue = kernel[metric.fused_id]
        assert metric.name in epilogue["names"]
        assert epilogue["cols"] == len(metric.columns) and epilogue["keep"] == KEEP_IDS[metric.keep]
        for missing in (True, False):
            counts = metric.counts(layout_for(metric, 100, missing))
            assert epilogue["counts"] == len(counts)
            if epilogue["count_names"] != ("d",):  # snp / hamming: one count, named as the metric
                assert epilogue["count_names"] == tuple(counts), metric.name
                assert epilogue["column_names"] == metric.columns, metric.name
            spec = fused_spec(metric, counts)
            assert spec is not None and spec.metric_id == metric.fused_id
            assert spec.counts == tuple(counts) and spec.columns == metric.columns
