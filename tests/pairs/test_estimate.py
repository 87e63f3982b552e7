"""The planning model of `genotile plan`."""

import pytest

from genotile.cli import main
from genotile.core.metrics import METRICS
from genotile.errors import GenotileError
from genotile.pairs.estimate import bit_macs_per_pair, estimate, layout_for

RATES = {"x": {m: 1e12 for m in METRICS}}


def test_tiles_jobs_pairs_and_work():
    est = estimate(
        METRICS["king"],
        10_000,
        50_000,
        block_size=3000,
        devices=2,
        tiles_per_job=3,
        rates=RATES,
        backend="x",
        density=0.01,
    )
    assert est.tiles == 10  # 4 blocks: 4 * 5 / 2
    assert est.jobs == 4
    assert est.pairs == 10_000 * 9_999 // 2
    assert est.element_comparisons == est.pairs * 50_000
    assert est.seconds == pytest.approx(est.element_comparisons / 2e12)
    assert est.pairs_passing == pytest.approx(0.01 * est.pairs)
    assert est.matrix_bytes == 10_000**2 * 10


@pytest.mark.parametrize(
    ("metric", "complete", "products"),
    [
        ("snp", False, 3),  # V.N, N.V, N_B.N_B on biallelic columns
        ("hamming", False, 1),  # row sums + N_B.N_B
        ("ibs", False, 7),
        ("ibs", True, 2),
        ("king", False, 6),
        ("king", True, 3),
        ("ccc2", False, 9),
        ("ccc2", True, 4),
    ],
)
def test_bit_macs_per_pair_count_the_metrics_products(metric, complete, products):
    m = METRICS[metric]
    assert bit_macs_per_pair(m, layout_for(m, 6400, missing=not complete)) == products * 6400


def test_issue_scale_plans_are_submittable(capsys):
    assert (
        main(
            [
                "plan",
                "--vectors",
                "1000000",
                "--fields",
                "1000000",
                "--metric",
                "king",
                "--block-size",
                "16384",
                "--density",
                "1e-6",
                "--gpus",
                "8",
                "--tiles-per-job",
                "4",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "1,953 tiles" in out and "489 jobs" in out and "memory per job" in out and "no matrix.tsv" in out
    assert (
        main(
            [
                "plan",
                "--vectors",
                "1000000",
                "--fields",
                "100000",
                "--metric",
                "ccc2",
                "--block-size",
                "16384",
                "--density",
                "1e-4",
                "--gpus",
                "8",
            ]
        )
        == 0
    )


def test_bad_plan_arguments():
    with pytest.raises(GenotileError):
        estimate(METRICS["snp"], 10, 10, block_size=0)
    with pytest.raises(GenotileError, match="density"):
        estimate(METRICS["snp"], 10, 10, density=2)
    with pytest.raises(GenotileError, match="no measured rate"):
        estimate(METRICS["snp"], 10, 10, backend="nope")
