"""The config's validation (runtime/workflow.validate_config): what snakemake.utils.validate
gives with the workflow's schema, defaults and refusals alike, with the YAML schema read once per
content (kept as JSON under .snakemake/genotile/schema)."""

import copy
import json
from pathlib import Path

import pytest
from snakemake.common.configfile import load_configfile
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from genotile.errors import GenotileError
from genotile.runtime.workflow import schema_error, validate_config

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"

CONFIGS = [
    load_configfile(str(REPO / "config" / "config.yaml")),
    {"datasets": {"d": {"input": "a.fa", "metrics": ["snp"]}}},
    {"datasets": {"d": {"input": "a.vcf.gz", "metrics": ["king", "ibs"], "formats": ["kin0"]}}, "ccc3": {}},
    {"datasets": {"d": {"input": "a.fa", "metrics": ["snp"], "against": "b.fa"}}, "thresholds": {"snp": 3}},
    {},
    {"datasets": {"d": {"input": "a.fa", "metrics": ["nope"]}}},
    {"datasets": {"d": {"input": "a.fa", "metrics": ["snp"]}}, "thresholds": {"snp": "x"}},
    {"datasets": {"d": {"input": "a.fa", "metrics": ["snp"]}}, "block_size": -3},
    {"datasets": {"d": {"metrics": ["snp"]}}},
    {"datasets": {"d": {"input": "a.fa", "metrics": ["snp"]}}, "unknown_key": 1},
    # a list input (store/listed.py): files of one kind; not empty, each file once
    {"datasets": {"d": {"input": ["a.fa", "b.fa"], "metrics": ["snp"]}}},
    {"datasets": {"d": {"input": ["a.vcf.gz"], "metrics": ["ibs"]}}},
    {"datasets": {"d": {"input": [], "metrics": ["snp"]}}},
    {"datasets": {"d": {"input": ["a.fa", "a.fa"], "metrics": ["snp"]}}},
    {"datasets": {"d": {"input": ["a.fa", ""], "metrics": ["snp"]}}},
]


def _snakemakes(config: dict):
    try:
        validate(config, schema=str(SCHEMA))
    except WorkflowError as exc:
        return "refused", str(schema_error(exc))
    return "valid", repr(config)


def _ours(config: dict, cache: Path):
    try:
        validate_config(config, SCHEMA, cache)
    except GenotileError as exc:
        return "refused", str(exc)
    return "valid", repr(config)


@pytest.mark.parametrize("config", CONFIGS, ids=range(len(CONFIGS)))
def test_the_same_defaults_and_refusals_as_snakemakes_validate(tmp_path, config):
    want = _snakemakes(copy.deepcopy(config))
    assert _ours(copy.deepcopy(config), tmp_path / "cache") == want  # the YAML read
    assert _ours(copy.deepcopy(config), tmp_path / "cache") == want  # the JSON kept


def test_the_schema_is_read_once_per_content(tmp_path, monkeypatch):
    import snakemake.common.configfile as configfile

    read = []

    loader = configfile.load_configfile
    monkeypatch.setattr(configfile, "load_configfile", lambda path: read.append(path) or loader(path))
    schema, cache = tmp_path / "schema.yaml", tmp_path / "cache"
    schema.write_text(SCHEMA.read_text())
    for _ in range(2):
        validate_config(copy.deepcopy(CONFIGS[1]), schema, cache)
    assert len(read) == 1 and len(list(cache.glob("*.json"))) == 1
    assert json.loads(next(cache.glob("*.json")).read_text()) == loader(str(SCHEMA))
    schema.write_text(SCHEMA.read_text().replace("default: 20000", "default: 7"))  # dense_max's
    config = copy.deepcopy(CONFIGS[1])
    validate_config(config, schema, cache)
    assert len(read) == 2 and config["dense_max"] == 7
