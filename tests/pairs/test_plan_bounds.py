"""The planning bounds live in the plan steps (core/limits.check_plan), so `genotile run` refuses
exactly the runs the workflow's plan refuses: a 2-way metric with a null threshold past
`pairs_max` pairs, and the defaults agree with the config schema's."""

import pytest
import yaml
from conftest import make_alignment, write_fasta
from snakerun import REPO, snakemake

from genotile import cli
from genotile.core import ccc3, limits
from genotile.errors import GenotileError

N = 12  # vectors: 66 pairs


def test_schema_defaults_are_the_plan_steps():
    schema = yaml.safe_load((REPO / "config" / "schema" / "config.schema.yaml").read_text())["properties"]
    assert schema["pairs_max"]["default"] == limits.PAIRS_MAX
    assert schema["ccc3"]["properties"]["null_threshold_max"]["default"] == ccc3.NULL_THRESHOLD_MAX


def test_check_plan_bounds_each_workload():
    limits.check_plan(N, ["snp", "hamming"], {"snp": 3}, pairs_max=66)
    limits.check_plan(10**6, ["snp"], {"snp": 3}, pairs_max=1)  # a threshold bounds the output itself
    with pytest.raises(GenotileError, match=r"^x: hamming with a null threshold .* 66 pairs of 12 vectors"):
        limits.check_plan(N, ["snp", "hamming"], {"snp": 3}, pairs_max=65, where="x: ")
    limits.check_plan(2000, ["ccc3"], {})  # ccc3's own bound, not pairs_max
    with pytest.raises(GenotileError, match=r"allowed up to 10 vectors \(ccc3: null_threshold_max\)"):
        limits.check_plan(11, ["ccc3", "ccc2"], {"ccc2": 0.5}, ccc3_null_max=10)


@pytest.mark.parametrize(
    "thresholds, pairs_max, refused",
    [({}, 65, True), ({}, 66, False), ({"snp": 5}, 10, False)],
    ids=["null-past-pairs_max", "null-at-pairs_max", "threshold"],
)
def test_genotile_run_refuses_what_the_workflow_plan_refuses(tmp_path, capsys, thresholds, pairs_max, refused):
    aln = write_fasta(tmp_path / "aln.fa", make_alignment(N, 40, seed=3))
    config = {
        "datasets": {"d": {"input": str(aln), "metrics": ["snp"]}},
        "thresholds": thresholds,
        "pairs_max": pairs_max,
    }
    work = tmp_path / "wf"
    work.mkdir()
    proc = snakemake(work, config, "results/d/store/nucleotide/plan.json", check=False)
    wanted = "snp with a null threshold would write every one of the 66 pairs of 12 vectors"
    assert (proc.returncode != 0) == refused, proc.stderr[-3000:]
    assert (wanted in proc.stderr) == refused
    assert (work / "results/d/store/nucleotide/plan.json").exists() != refused  # refused before it is written

    argv = ["run", str(aln), "--outdir", str(tmp_path / "cli"), "--metric", "snp", "--pairs-max", str(pairs_max)]
    argv += [f"--threshold=snp={v}" for v in thresholds.values()]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert (code != 0) == refused, err[-3000:]
    assert (wanted in err) == refused
    assert (tmp_path / "cli" / "snp" / "pairs.tsv.gz").exists() != refused  # no tile, no merge
