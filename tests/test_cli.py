"""The `genotile` command line: help on every option, the config's keys as flags, refusals by flag.

Results of `genotile run` with VCF options, ccc parameters and ccc3 are compared with the
in-process stages given the same settings (the workflow's outputs are tested against those).
"""

import argparse
import gzip
import json
import shutil
import subprocess
import sys

import pytest
from genodata import random_genotypes, vcf_text, write_vcf

from genotile import backends
from genotile.cli import _parser, main
from genotile.pipeline import run_all, run_ccc3


def subcommands() -> dict[str, argparse.ArgumentParser]:
    ap = _parser()
    action = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_option_has_help_and_run_help_names_every_input_kind():
    for name, parser in subcommands().items():
        for action in parser._actions:
            assert action.help, f"genotile {name} {'/'.join(action.option_strings) or action.dest} has no help"
    proc = subprocess.run([sys.executable, "-m", "genotile.cli", "run", "--help"], capture_output=True, text=True)
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 0
    for words in ("FASTA alignment", "VCF/BCF", "PLINK fileset", ".bed", ".pgen", "--quiet", "--threads", "--samples"):
        assert words in text, words


def test_config_keys_have_flags():
    flags = {o for a in subcommands()["run"]._actions for o in a.option_strings}
    # config key -> flag (datasets.<name>.<key> for the reader's options)
    for key in (
        "threshold",
        "backend",
        "threads",
        "block-size",
        "dense-max",
        "seed",
        "samples",
        "regions",
        "filter-pass",
        "multiallelic",
        "chromosomes",
        "ccc-multiplier",
        "ccc-param",
        "ccc3-block-size",
        "ccc3-stages",
        "ccc3-null-threshold-max",
        "format",
        "king-degrees",
        "king-cutoff",
        "quiet",
    ):
        assert f"--{key}" in flags, key


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    g = random_genotypes(19, 40, p_missing=0.1, seed=4)
    text = vcf_text(g, seed=4).replace("\tPASS\t", "\tq10\t", 5)  # 5 records FILTER q10
    vcf = write_vcf(root / "g.vcf", text)
    (root / "keep.txt").write_text("s7\ns3\ns12\ns0\ns5\n")
    fasta = root / "a.fa"
    fasta.write_text(">a\nACGTAC\n>b\nACGAAC\n>c\nTCGTNN\n")
    (root / "b.fa").write_text(">d\nACGTAA\n>e\nNCGTAC\n")  # a further file of a list input
    return root, vcf, fasta


@pytest.mark.parametrize(
    "args, message",
    [
        (["--metric", "snp", "--threshold", "king=0.1"], "--threshold king=...: king is not one of --metric (snp)"),
        (
            ["--metric", "snp", "--samples", "keep.txt"],
            "--samples apply to genotype input (a VCF/BCF, a PLINK fileset or a VCF-Zarr store), not to",
        ),
        (["--metric", "snp", "--filter-pass", "--multiallelic", "split"], "--filter-pass, --multiallelic apply to"),
        (["--metric", "snp", "--regions", "1:1-5"], "--regions apply to genotype input"),
        (["--metric", "snp", "--chromosomes", "all"], "--chromosomes apply to genotype input"),
        (["--metric", "snp", "--ccc-multiplier", "4"], "--ccc-multiplier apply to --metric ccc2 or ccc3, not to snp"),
        (["--metric", "snp", "--metric", "king"], "--metric snp need a FASTA alignment and --metric king genotypes"),
        (["--metric", "snp", "--format", "kin0"], "--format kin0 is written for --metric king, not for snp"),
        (["--metric", "snp", "--king-cutoff", "0.1"], "--king-cutoff apply to --metric king, not to snp"),
    ],
)
def test_options_that_do_not_apply_are_refused_by_flag(inputs, capsys, args, message):
    root, _, fasta = inputs
    args = [a if a != "keep.txt" else str(root / "keep.txt") for a in args]
    assert main(["run", str(fasta), "--outdir", str(root / "never"), *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("genotile error: ") and message in err and err.count("\n") == 1, err
    assert not (root / "never").exists()


def test_genotype_refusals(inputs, capsys):
    root, vcf, _ = inputs
    out = str(root / "never")
    assert main(["run", str(vcf), "--outdir", out, "--metric", "king", "--ccc3-stages", "2"]) == 1
    assert "--ccc3-stages apply to --metric ccc3, not to king" in capsys.readouterr().err
    assert main(["run", str(vcf), "--outdir", out, "--metric", "hamming"]) == 1
    assert (
        "input " + str(vcf) + " is a VCF/BCF, but metric(s) hamming need a FASTA alignment" in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--threshold", "snp=abc"], "--threshold"),
        (["--threshold", "snp=inf"], "--threshold"),
        (["--threshold", "nope=1"], "--threshold"),
        (["--dense-max", "-3"], "--dense-max"),
        (["--seed", "x"], "--seed"),
        (["--block-size", "0"], "--block-size"),
        (["--threads", "0"], "--threads"),
        (["--backend", "cuda"], "--backend"),
        (["--ccc-param", "nan"], "--ccc-param"),
        (["--multiallelic", "keep"], "--multiallelic"),
        (["--chromosomes", "X"], "--chromosomes"),
    ],
)
def test_a_bad_value_is_refused_naming_its_flag(inputs, capsys, args, flag):
    _, _, fasta = inputs
    with pytest.raises(SystemExit) as exc:
        main(["run", str(fasta), "--outdir", "x", "--metric", "snp", *args])
    assert exc.value.code == 2
    # the one line that matters and where to read more, not the 16-line usage before it
    first, hint = capsys.readouterr().err.splitlines()
    assert first.startswith(f"genotile error: argument {flag}: ") and hint == "see: genotile run --help", first


def test_a_missing_argument_is_one_line(capsys):
    for argv, prog in (
        (["run", "x.fa"], "genotile run"),
        (["plan", "--metric", "king"], "genotile plan"),
        ([], "genotile"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        first, hint = capsys.readouterr().err.splitlines()
        assert first.startswith("genotile error: the following arguments are required: "), first
        assert hint == f"see: {prog} --help"


def test_outdir_on_a_file_is_refused_by_name(inputs, tmp_path, capsys):
    _, _, fasta = inputs
    a_file = tmp_path / "taken"
    a_file.write_text("not a folder\n")
    for outdir, says in ((a_file, "is a file"), (a_file / "sub" / "dir", f"is under {a_file}, a file")):
        assert main(["run", str(fasta), "--outdir", str(outdir), "--metric", "snp", "--backend", "numpy"]) == 1
        err = capsys.readouterr().err
        assert err == f"genotile error: --outdir {outdir} {says}, not a folder\n", err
    assert a_file.read_text() == "not a folder\n"


def test_a_path_that_cannot_be_written_is_one_line(inputs, tmp_path, capsys, monkeypatch):
    """A folder the user may not write (root passes any mode bits, so the refusal is raised)."""
    import genotile.pipeline

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "locked" / "store"))

    monkeypatch.setattr(genotile.pipeline, "run_all", refused)
    _, _, fasta = inputs
    assert main(["run", str(fasta), "--outdir", str(tmp_path / "locked"), "--metric", "snp"]) == 1
    assert capsys.readouterr().err == f"genotile error: {tmp_path / 'locked' / 'store'}: Permission denied\n"


@pytest.mark.parametrize("second", ["0.2", "0.1", "null"])
def test_a_metric_thresholded_twice_is_refused(inputs, tmp_path, capsys, second):
    _, vcf, _ = inputs
    out = tmp_path / "never"
    argv = ["run", str(vcf), "--outdir", str(out), "--metric", "king", "--threshold", "king=0.1"]
    assert main([*argv, "--threshold", f"king={second}"]) == 1
    err = capsys.readouterr().err
    assert err == f"genotile error: --threshold king is given twice (0.1 and {second}): give it once\n", err
    assert not out.exists()


def test_king_cutoff_help_says_strictly_above():
    (action,) = [a for a in subcommands()["run"]._actions if "--king-cutoff" in a.option_strings]
    assert "above KINSHIP (strictly" in action.help and "at or above" not in action.help


def test_vcf_options_and_ccc_parameters_reach_the_stages(inputs, tmp_path, capsys):
    root, vcf, _ = inputs
    args = ["--samples", str(root / "keep.txt"), "--filter-pass", "--backend", "numpy", "--threads", "1"]
    args += ["--ccc-multiplier", "4", "--ccc-param", "0.5", "--threshold", "king=0.0", "--block-size", "3"]
    assert (
        main(["run", str(vcf), "--outdir", str(tmp_path / "cli"), "--metric", "king", "--metric", "ccc2", *args]) == 0
    )
    assert backends.numba_popcount.MAX_THREADS == 1
    assert "king: " in capsys.readouterr().out
    run_all(
        vcf,
        tmp_path / "run_all",
        ["king", "ccc2"],
        block_size=3,
        thresholds={"king": 0.0},
        backend="numpy",
        vcf_options={"samples": str(root / "keep.txt"), "filter_pass": True},
        metric_params={"ccc2": {"multiplier": 4, "param": 0.5}},
    )
    for metric in ("king", "ccc2"):
        ours = (tmp_path / "cli" / metric / "pairs.tsv.gz").read_bytes()
        assert ours == (tmp_path / "run_all" / metric / "pairs.tsv.gz").read_bytes(), metric
    with gzip.open(tmp_path / "cli" / "ccc2" / "pairs.tsv.gz", "rt") as fh:
        assert len(fh.read().splitlines()) == 1 + 35 * 34 // 2  # 40 - 5 filtered records; null threshold
    with gzip.open(tmp_path / "cli" / "king" / "pairs.tsv.gz", "rt") as fh:
        assert {line.split("\t")[0] for line in fh.read().splitlines()[1:]} <= {"s7", "s3", "s12", "s0", "s5"}


def test_chromosomes_from_the_cli(inputs, tmp_path, capsys):
    """--chromosomes reaches the readers as the workflow's `chromosomes` key does: autosomes by
    default (chrX records left out and counted), all on request; a change of it in one --outdir
    makes the store again."""
    g = random_genotypes(9, 30, p_missing=0.1, seed=6)
    plain = write_vcf(tmp_path / "plain.vcf", vcf_text(g, seed=6))
    text = vcf_text(g, seed=6).replace("##FILTER", "##contig=<ID=X>\n##FILTER", 1)
    chrx = [
        "\t".join(["X", str(100 + k), ".", "A", "G", ".", "PASS", ".", "GT", *["0/1", "1/1", "0/0"] * 3])
        for k in range(4)
    ]
    mixed = write_vcf(tmp_path / "mixed.vcf", text + "\n".join(chrx) + "\n")

    def run(vcf, outdir, *flags):
        assert main(["run", str(vcf), "--outdir", str(outdir), "--metric", "ibs", "--backend", "numpy", *flags]) == 0
        counts = json.loads((outdir / "ingest" / "genotype.json").read_text())["counts"]
        return (outdir / "ibs" / "pairs.tsv.gz").read_bytes(), counts

    base, _ = run(plain, tmp_path / "plain")
    out = tmp_path / "mixed"
    autosomes, counts = run(mixed, out)
    assert autosomes == base and counts["non_autosomal_skipped"] == 4 and counts["variants"] == 30
    every, counts = run(mixed, out, "--chromosomes", "all")
    assert every != base and counts["non_autosomal_skipped"] == 0 and counts["variants"] == 34
    assert run(mixed, out, "--chromosomes", "autosomes")[0] == base
    run_all(mixed, tmp_path / "api", ["ibs"], backend="numpy", vcf_options={"chromosomes": "all"})
    assert (tmp_path / "api" / "ibs" / "pairs.tsv.gz").read_bytes() == every


def test_ccc3_runs_from_the_cli(inputs, tmp_path, capsys):
    _, vcf, _ = inputs
    args = ["--metric", "ccc3", "--threshold", "ccc3=0.3", "--ccc3-block-size", "7", "--ccc3-stages", "2"]
    assert main(["run", str(vcf), "--outdir", str(tmp_path / "cli"), "--backend", "numpy", *args]) == 0
    assert "ccc3: " in capsys.readouterr().out
    run_all(vcf, tmp_path / "run_all", ["ccc2"], backend="numpy")
    run_ccc3(tmp_path / "run_all" / "store" / "genotype_t", tmp_path / "ref", block_size=5, threshold=0.3)
    ours = (tmp_path / "cli" / "ccc3" / "triples.tsv.gz").read_bytes()
    assert ours == (tmp_path / "ref" / "triples.tsv.gz").read_bytes()


def test_quiet_prints_only_the_results(inputs, tmp_path):
    _, _, fasta = inputs
    for quiet in (False, True):
        cmd = [sys.executable, "-m", "genotile.cli", "run", str(fasta), "--outdir", str(tmp_path / str(quiet))]
        cmd += ["--metric", "snp", "--backend", "numpy"] + (["--quiet"] if quiet else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.startswith("snp: 3 of 3 pairs pass"), proc.stderr
        assert (proc.stderr == "") == quiet, proc.stderr


@pytest.mark.peers  # needs plink2 / plink1.9
def test_plink_input_from_the_cli(inputs, tmp_path):
    _, vcf, _ = inputs
    if shutil.which("plink2") is None:
        pytest.skip("plink2 is not installed")
    text = vcf.read_text()
    for half in ("./1", "1/.", ".|1", "1|."):
        text = text.replace(f"\t{half}", "\t./.")
    plain = write_vcf(tmp_path / "p.vcf", text)
    subprocess.run(["plink2", "--vcf", plain, "--make-bed", "--out", tmp_path / "b"], check=True, capture_output=True)
    for source, out in ((tmp_path / "b.bed", "bed"), (plain, "vcf")):
        assert main(["run", str(source), "--outdir", str(tmp_path / out), "--metric", "ibs", "-q"]) == 0
    ours = (tmp_path / "bed" / "ibs" / "pairs.tsv.gz").read_bytes()
    assert ours == (tmp_path / "vcf" / "ibs" / "pairs.tsv.gz").read_bytes()


def test_peer_formats_and_relatedness_from_the_cli(inputs, tmp_path):
    """--format, --king-degrees and --king-cutoff write what the workflow's opt-in rules write
    (the same run_all, given the dataset's formats, king_degrees and king_cutoff)."""
    _, vcf, _ = inputs
    out = tmp_path / "cli"
    args = ["run", str(vcf), "--outdir", str(out), "--metric", "king", "--metric", "ibs", "--quiet"]
    args += ["--format", "kin0", "--format", "mdist", "--king-degrees", "--king-cutoff", "0.0884"]
    assert main(args) == 0
    opt_in = {"formats": ["kin0", "mdist"], "king_degrees": True, "king_cutoff": 0.0884}
    run_all(vcf, tmp_path / "direct", ["king", "ibs"], opt_in=opt_in)
    names = {
        "king": ["plink2.kin0", "degrees.tsv.gz", "king.unrelated.in.id", "king.unrelated.out.id"],
        "ibs": ["plink.mdist", "plink.mdist.id"],
    }
    for metric, files in names.items():
        for name in files:
            got = (out / metric / name).read_bytes()
            assert got and got == (tmp_path / "direct" / metric / name).read_bytes(), (metric, name)


def test_run_takes_several_inputs(inputs, tmp_path, capsys):
    root, vcf, fasta = inputs
    args = _parser().parse_args(["run", str(fasta), str(root / "b.fa"), "--outdir", "o", "--metric", "snp"])
    assert args.input == [str(fasta), str(root / "b.fa")]
    assert _parser().parse_args(["run", "--outdir", "o", "--metric", "snp", "x.fa"]).input == ["x.fa"]
    # --against takes one FILE a flag, repeated for a list (no earlier one dropped); a file after it
    # is not taken as FILE's
    common = ["--outdir", "o", "--metric", "snp"]
    args = _parser().parse_args(["run", "in.fa", "--against", "a.fa", "--against", "b.fa", *common])
    assert (args.input, args.against) == (["in.fa"], ["a.fa", "b.fa"])
    with pytest.raises(SystemExit):
        main(["run", "in.fa", "--against", "a.fa", "r.fa", *common])
    assert capsys.readouterr().err == "genotile error: unrecognized arguments: r.fa\nsee: genotile run --help\n"


def test_a_list_of_mixed_kinds_as_input_or_against_is_one_line(inputs, capsys):
    root, vcf, fasta = inputs
    never = str(root / "never")
    assert main(["run", str(fasta), str(vcf), "--outdir", never, "--metric", "snp"]) == 1
    err = capsys.readouterr().err
    assert f"input {vcf} is a VCF/BCF, but {fasta} of the same list is a FASTA alignment" in err, err
    assert err.startswith("genotile error: ") and err.count("\n") == 1, err
    assert main(["run", str(fasta), str(fasta), "--outdir", never, "--metric", "snp"]) == 1
    assert f"input {fasta} is listed twice" in capsys.readouterr().err
    again = ["--against", str(fasta), "--against", str(vcf)]
    assert main(["run", str(root / "b.fa"), "--outdir", never, "--metric", "snp", *again]) == 1
    err = capsys.readouterr().err
    assert f"against: input {vcf} is a VCF/BCF, but {fasta} of the same list" in err and err.count("\n") == 1, err
    # options for genotypes, given to a list of alignments: the list named as its files joined
    assert (
        main(["run", str(fasta), str(root / "b.fa"), "--outdir", never, "--metric", "snp", "--chromosomes", "all"]) == 1
    )
    assert f"not to the alignment {fasta} + {root / 'b.fa'}" in capsys.readouterr().err
    assert not (root / "never").exists()
