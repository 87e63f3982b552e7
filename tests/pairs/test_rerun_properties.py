"""Property (issue 15): whatever is edited between `genotile run`s into the same folder -- the
input's content (mtime set back, as `cp -p` does), its old content restored, the samples file,
the block size, the threshold, dense_max -- every run's outputs equal a clean run's."""

import json
import os
import tempfile
from pathlib import Path

from genodata import random_genotypes, vcf_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotile.pipeline import run_all

OLD = 1_000_000_000  # an mtime older than any output
FILES = ("matrix.tsv", "pairs.tsv.gz", "histogram.tsv")
INPUTS = [vcf_text(random_genotypes(9, 30, seed=s), seed=s) for s in (51, 52)]
SAMPLES = ["s0\ns2\ns3\ns5\ns8\n", "s0\ns2\ns3\ns5\ns7\n", "s8\ns1\ns4\ns6\ns2\ns0\n"]

EDITS = st.one_of(
    st.tuples(st.just("input"), st.integers(0, len(INPUTS) - 1)),
    st.tuples(st.just("samples"), st.integers(0, len(SAMPLES) - 1)),
    st.tuples(st.just("block_size"), st.sampled_from([2, 3, 64])),
    st.tuples(st.just("threshold"), st.sampled_from([None, 0.3, 0.45])),
    st.tuples(st.just("dense_max"), st.sampled_from([3, 100])),
)


def outputs(folder: Path) -> dict:
    found = {name: (folder / name).read_bytes() for name in FILES if (folder / name).exists()}
    summary = json.loads((folder / "summary.json").read_text())
    found["summary"] = {k: summary[k] for k in ("input_sha256", "threshold", "plan", "n_vectors", "pairs_passing")}
    found["listed"] = sorted(summary["outputs"])
    return found


def write(path: Path, text: str) -> None:
    """New content with an old mtime: only the content tells that it changed."""
    path.write_text(text)
    os.utime(path, (OLD, OLD))


def run(vcf, samples, out, state) -> dict:
    run_all(
        vcf,
        out,
        ["ibs"],
        block_size=state["block_size"],
        thresholds={"ibs": state["threshold"]},
        dense_max=state["dense_max"],
        vcf_options={"samples": str(samples)},
        backend="numpy",
    )
    return outputs(out / "ibs")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=st.lists(EDITS, min_size=1, max_size=4))
def test_reruns_after_any_edits_equal_a_clean_run(edits):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        vcf, samples, out = tmp / "in.vcf", tmp / "samples.txt", tmp / "out"
        write(vcf, INPUTS[0])
        write(samples, SAMPLES[0])
        state = {"block_size": 3, "threshold": 0.45, "dense_max": 100}
        run(vcf, samples, out, state)
        for k, (what, value) in enumerate(edits):
            if what == "input":
                write(vcf, INPUTS[value])
            elif what == "samples":
                write(samples, SAMPLES[value])
            else:
                state[what] = value
            got = run(vcf, samples, out, state)
            assert got == run(vcf, samples, tmp / f"clean{k}", state), (edits[: k + 1], state)
