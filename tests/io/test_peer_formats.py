"""Peer-format outputs against the real tools' bytes: PLINK 2 .kin0, PLINK 1.9 .mdist/.mdist.id,
snp-dists -m / -b -c (/ -a), and PLINK's number printing.

The PLINK tests skip where `plink2` / `plink1.9` are missing (CI installs both). snp-dists is
compared with a binary named by GENOTILE_SNP_DISTS when set (README, Peer formats: built from
its source), else with the format its source writes, spelled out here.
"""

import os
import random
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from genodata import MISSING, random_genotypes, vcf_text
from reference import pair_matrix
from snakerun import random_alignment, write_fasta

from genotile import pipeline
from genotile.errors import GenotileError
from genotile.io import peer_formats
from genotile.io.peer_formats import plink_g
from genotile.pairs import peers


def need(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.skip(f"{binary} is not installed (Debian: apt-get install -y {binary})")
    return path


def plink(binary: str, vcf: Path, args: list[str], out: Path) -> None:
    # --vcf-half-call m: a half call (./1) is missing, as genotile reads it
    cmd = [need(binary), "--vcf", str(vcf), "--vcf-half-call", "m", "--allow-extra-chr", "--threads", "1"]
    subprocess.run([*cmd, *args, "--out", str(out)], check=True, capture_output=True)


def genotile(vcf_or_fasta: Path, out: Path, metric: str, names, *, threshold=None, king_cutoff=None) -> Path:
    """Run `metric` in process (blocks of 7: several tiles) and write the outputs `names`."""
    pipeline.run_all(vcf_or_fasta, out, [metric], block_size=7, thresholds={metric: threshold})
    mdir = out / metric
    encoding = {"king": "genotype", "ibs": "genotype", "snp": "nucleotide", "hamming": "categorical"}[metric]
    tiles = sorted((mdir / "pairs").glob("tile_*.npz"))
    paths = [mdir / name for name in names]
    peers.write_outputs(tiles, out / "store" / encoding / "manifest.json", metric, paths, king_cutoff=king_cutoff)
    return mdir


@pytest.fixture(scope="module")
def genotypes_vcf(tmp_path_factory) -> Path:
    """40 samples x 300 variants, 8% missing calls (half calls among them), with a sample without
    calls (nan), one without hets (-inf), duplicates and relatives planted by copying calls."""
    g = random_genotypes(40, 300, p_missing=0.08, seed=11)
    rng = np.random.default_rng(11)
    for k, src in ((20, 5), (21, 6), (22, 7), (30, 8)):
        share = rng.random(300) < (0.9 if k < 22 else 0.5)
        g[k, share] = g[src, share]
    g[25, rng.random(300) < 0.3] = MISSING
    path = tmp_path_factory.mktemp("peers") / "g.vcf"
    path.write_text(vcf_text(g, seed=11))
    return path


def near_tie(x: float) -> bool:
    """Whether x's exact decimal value is within 1e-7 of a tie at its 6th significant digit."""
    d = abs(Decimal(x))
    scaled = d.scaleb(5 - d.adjusted())
    return abs(scaled - int(scaled) - Decimal("0.5")) < Decimal("1e-7")


def test_plink_g_is_printf_g_except_at_ties():
    """Away from a decimal tie PLINK's 6 digits are C's %g; at one it rounds half to even on the
    exact value, where %g rounds the double's binary expansion."""
    rng = random.Random(3)
    checked = 0
    for _ in range(20000):
        x = rng.choice([rng.uniform(-1, 1), 10 ** rng.uniform(-12, 12), -(10 ** rng.uniform(-320, 300))])
        if x and not near_tie(x):
            assert plink_g(x) == f"{x:g}", x  # C printf("%g")
            checked += 1
    assert checked > 19000


@pytest.mark.parametrize(
    "value, printed",
    [
        (0.0, "0"),
        (-0.0, "0"),  # %g: -0
        (0.5, "0.5"),
        (1.0, "1"),
        (3 / 2560, "0.00117188"),  # a tie: %g prints 0.00117187 (the double is just below)
        (-17 / 1280, "-0.0132812"),  # a tie rounded to the even digit 2
        (0.0001, "0.0001"),
        (9.99999e-5, "9.99999e-05"),
        (1.5e-5, "1.5e-05"),
        (99999.95, "100000"),  # %g: 99999.9
        (999999.5, "1e+06"),
        (1234567.0, "1.23457e+06"),
        (1e300, "1e+300"),
        (5e-324, "4.94066e-324"),
        (float("nan"), "nan"),
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
    ],
)
def test_plink_g_values(value, printed):
    assert plink_g(value) == printed


def test_plink_g_array_matches_one_value_at_a_time():
    """Every branch (nan, inf, 0, small and large exponents, [1, 1e6), below 1) in one array."""
    rng = np.random.default_rng(2)
    values = np.concatenate(
        [
            [np.nan, np.inf, -np.inf, 0.0, -0.0, 3 / 2560, 99999.95, 999999.5],
            rng.uniform(-1, 1, 300),
            10 ** rng.uniform(-30, 30, 300) * rng.choice([-1, 1], 300),
        ]
    )
    assert peer_formats.plink_g_array(values).tolist() == [plink_g(v) for v in values.tolist()]


@pytest.mark.peers  # needs plink2 / plink1.9
def test_kin0_equals_plink2_bytes(genotypes_vcf, tmp_path):
    """Every pair (no threshold): the .kin0 is byte for byte plink2's (nan, -inf, ties included)."""
    plink("plink2", genotypes_vcf, ["--make-king-table"], tmp_path / "p")
    mdir = genotile(genotypes_vcf, tmp_path / "g", "king", ["plink2.kin0"])
    theirs = (tmp_path / "p.kin0").read_bytes()
    assert theirs.startswith(b"#IID1\tIID2\tNSNP\tHETHET\tIBS0\tKINSHIP\n")
    assert b"\tnan\n" in theirs and b"\t-inf\n" in theirs  # the data reach both special cases
    assert (mdir / "plink2.kin0").read_bytes() == theirs


@pytest.mark.peers  # needs plink2 / plink1.9
def test_kin0_with_threshold_is_plink2_king_table_filter(genotypes_vcf, tmp_path):
    """With the king threshold: plink2 --king-table-filter's rows, less those with a nan kinship
    (plink2 keeps them, as nan < filter is false; genotile's threshold keeps kinship >= value)."""
    plink("plink2", genotypes_vcf, ["--make-king-table", "--king-table-filter", "0.0442"], tmp_path / "p")
    mdir = genotile(genotypes_vcf, tmp_path / "g", "king", ["plink2.kin0"], threshold=0.0442)
    theirs = (tmp_path / "p.kin0").read_text().splitlines(keepends=True)
    kept = [line for line in theirs if not line.endswith("\tnan\n")]
    assert len(kept) < len(theirs) and len(kept) > 5
    assert (mdir / "plink2.kin0").read_text().splitlines(keepends=True) == kept


def test_kin0_with_family_ids(tmp_path):
    ids, fids = ["a", "b", "c"], ["F1", "F1", "F2"]
    a, b = np.array([0, 0, 1]), np.array([1, 2, 2])
    counts = np.array([10, 0, 4])
    peer_formats.write_kin0(
        tmp_path / "k.kin0", ids, a, b, counts, counts // 2, counts // 4, np.array([0.25, np.nan, -0.1]), fids
    )
    assert (tmp_path / "k.kin0").read_text() == (
        "#FID1\tIID1\tFID2\tIID2\tNSNP\tHETHET\tIBS0\tKINSHIP\n"
        "F1\tb\tF1\ta\t10\t0.5\t0.2\t0.25\n"
        "F2\tc\tF1\ta\t0\tnan\tnan\tnan\n"
        "F2\tc\tF1\tb\t4\t0.5\t0.25\t-0.1\n"
    )


@pytest.mark.peers  # needs plink2 / plink1.9
def test_mdist_equals_plink19_bytes(genotypes_vcf, tmp_path):
    """--double-id: FID = IID = the VCF sample ID, as genotile's .mdist.id names samples."""
    plink("plink1.9", genotypes_vcf, ["--double-id", "--distance", "square", "1-ibs", "flat-missing"], tmp_path / "p")
    mdir = genotile(genotypes_vcf, tmp_path / "g", "ibs", ["plink.mdist", "plink.mdist.id"])
    theirs = (tmp_path / "p.mdist").read_bytes()
    assert b"nan" in theirs
    assert (mdir / "plink.mdist").read_bytes() == theirs
    assert (mdir / "plink.mdist.id").read_bytes() == (tmp_path / "p.mdist.id").read_bytes()


def test_mdist_every_pair_even_with_a_threshold(genotypes_vcf, tmp_path):
    """The .mdist comes from the dense matrix: the ibs threshold drops no cell of it."""
    everything = genotile(genotypes_vcf, tmp_path / "all", "ibs", ["plink.mdist", "plink.mdist.id"])
    kept = genotile(genotypes_vcf, tmp_path / "some", "ibs", ["plink.mdist", "plink.mdist.id"], threshold=0.2)
    assert (kept / "plink.mdist").read_bytes() == (everything / "plink.mdist").read_bytes()


@pytest.mark.peers  # needs plink2 / plink1.9
def test_plink_fileset_outputs_equal_plink_bytes(genotypes_vcf, tmp_path):
    """A .bed/.bim/.fam with family IDs: FID and IID columns apart in .kin0, .mdist.id and the
    king-cutoff lists, byte for byte as plink2 and plink1.9 write them from the same fileset."""
    plink("plink2", genotypes_vcf, ["--make-bed"], tmp_path / "b")
    fam = tmp_path / "b.fam"
    rows = [line.split("\t") for line in fam.read_text().splitlines()]
    fam.write_text("".join("\t".join([f"F{k // 3}", *row[1:]]) + "\n" for k, row in enumerate(rows)))
    bfile = ["--bfile", str(tmp_path / "b"), "--threads", "1", "--out"]
    run = [need("plink2"), *bfile]
    subprocess.run([*run, str(tmp_path / "k"), "--make-king-table"], check=True, capture_output=True)
    subprocess.run([*run, str(tmp_path / "c"), "--king-cutoff", "0.0884"], check=True, capture_output=True)
    distance = ["--distance", "square", "1-ibs", "flat-missing"]
    subprocess.run([need("plink1.9"), *bfile, str(tmp_path / "m"), *distance], check=True, capture_output=True)
    cutoff = ["plink2.kin0", "king.unrelated.in.id", "king.unrelated.out.id"]
    king = genotile(tmp_path / "b.bed", tmp_path / "g", "king", cutoff, king_cutoff=0.0884)
    ibs = genotile(tmp_path / "b.bed", tmp_path / "g", "ibs", ["plink.mdist", "plink.mdist.id"])
    assert (tmp_path / "k.kin0").read_text().startswith("#FID1\tIID1\tFID2\tIID2\t")
    assert (king / "plink2.kin0").read_bytes() == (tmp_path / "k.kin0").read_bytes()
    for kind in ("in", "out"):  # the same set here: PLINK 2's greedy finds a maximum one
        theirs = (tmp_path / f"c.king.cutoff.{kind}.id").read_bytes()
        assert (king / f"king.unrelated.{kind}.id").read_bytes() == theirs
    assert (ibs / "plink.mdist").read_bytes() == (tmp_path / "m.mdist").read_bytes()
    assert (ibs / "plink.mdist.id").read_bytes() == (tmp_path / "m.mdist.id").read_bytes()


def test_run_all_writes_the_opt_in_outputs(genotypes_vcf, tmp_path):
    """`pipeline.run_all(..., opt_in=...)` (genotile run, no Snakemake) writes what the rules write."""
    opt_in = {"formats": ["kin0", "mdist"], "king_degrees": True, "king_cutoff": 0.0884}
    run = tmp_path / "run"
    pipeline.run_all(genotypes_vcf, run, ["king", "ibs"], block_size=7, thresholds={"king": 0.0442}, opt_in=opt_in)
    king_files = ["plink2.kin0", "degrees.tsv.gz", *peer_formats.KING_CUTOFF_FILES]
    king = genotile(genotypes_vcf, tmp_path / "g", "king", king_files, threshold=0.0442, king_cutoff=0.0884)
    ibs = genotile(genotypes_vcf, tmp_path / "g", "ibs", ["plink.mdist", "plink.mdist.id"])
    for mdir, names in ((king, king_files), (ibs, ["plink.mdist", "plink.mdist.id"])):
        for name in names:
            assert (run / mdir.name / name).read_bytes() == (mdir / name).read_bytes(), name
    with pytest.raises(peer_formats.GenotileError, match="format kin0 is written for metric king"):
        pipeline.run_all(genotypes_vcf, tmp_path / "bad", ["ibs"], opt_in={"formats": ["kin0"]})


@pytest.fixture(scope="module")
def alignment(tmp_path_factory) -> Path:
    """11 sequences x 500 columns with N, gaps, IUPAC codes and lower case; no '.' (snp-dists
    ignores a '.' even with -a, genotile's hamming counts it as a symbol)."""
    rng = np.random.default_rng(4)
    path = tmp_path_factory.mktemp("aln") / "a.fa"
    write_fasta(path, random_alignment(rng, 11, 500), ids=[f"seq_{i}" for i in range(11)])
    return path


def read_fasta(path: Path) -> list[str]:
    return ["".join(rec.splitlines()[1:]) for rec in path.read_text().split(">")[1:]]


def snp_dists_expected(ids, matrix, form: str) -> bytes:
    """snp-dists' output as its source prints it: -m is `%s\\t%s\\t%zu` for every (row, column),
    the self pairs included; -b -c the matrix with an empty corner cell and commas."""
    if form == "molten":
        return "".join(
            f"{ids[i]}\t{ids[j]}\t{matrix[i, j]}\n" for i in range(len(ids)) for j in range(len(ids))
        ).encode()
    lines = [",".join(["", *ids])] + [",".join([ids[i], *map(str, matrix[i])]) for i in range(len(ids))]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("metric, flags", [("snp", []), ("hamming", ["-a"])])
def test_snp_dists_forms(alignment, tmp_path, metric, flags):
    mdir = genotile(alignment, tmp_path / "g", metric, ["snp-dists.molten.tsv", "snp-dists.csv"], threshold=3)
    ids = [f"seq_{i}" for i in range(11)]
    matrix = pair_matrix(read_fasta(alignment), metric)  # brute force
    assert (mdir / "snp-dists.molten.tsv").read_bytes() == snp_dists_expected(ids, matrix, "molten")
    assert (mdir / "snp-dists.csv").read_bytes() == snp_dists_expected(ids, matrix, "csv")
    binary = os.environ.get("GENOTILE_SNP_DISTS")
    if binary:  # the real tool: -j 1, as its molten rows come in thread order otherwise
        run = [binary, "-q", "-j", "1", *flags]
        molten = subprocess.run([*run, "-m", str(alignment)], check=True, capture_output=True).stdout
        csv = subprocess.run([*run, "-b", "-c", str(alignment)], check=True, capture_output=True).stdout
        assert (mdir / "snp-dists.molten.tsv").read_bytes() == molten
        assert (mdir / "snp-dists.csv").read_bytes() == csv


def test_dense_formats_refused_past_dense_max():
    spec = {"metrics": ["snp"], "formats": ["snp-dists-csv"]}
    peer_formats.refuse_past_dense_max("d", spec, "snp", 5, 5)
    with pytest.raises(peer_formats.GenotileError, match="dataset d: format snp-dists-csv holds every pair.*dense_max"):
        peer_formats.refuse_past_dense_max("d", spec, "snp", 6, 5)
    peer_formats.refuse_past_dense_max("d", {"metrics": ["king"], "formats": ["kin0"]}, "king", 6, 5)  # pairs only


@pytest.mark.parametrize(
    "spec, threshold, message",
    [
        ({"metrics": ["ibs"], "formats": ["kin0"]}, None, "format kin0 is written for metric king"),
        ({"metrics": ["king"], "formats": ["mdist"]}, None, "format mdist is written for metric ibs"),
        ({"metrics": ["ibs"], "king_cutoff": 0.1}, None, "king_cutoff needs metric king"),
        ({"metrics": ["ibs"], "king_degrees": True}, None, "king_degrees needs metric king"),
        ({"metrics": ["king"], "king_cutoff": 0.0442}, 0.0884, r"king_cutoff 0.0442 needs every pair above it"),
    ],
)
def test_dataset_refusals(spec, threshold, message):
    with pytest.raises(peer_formats.GenotileError, match=f"dataset d: {message}"):
        peer_formats.check_dataset("d", spec, threshold)


def test_dataset_accepted():
    peer_formats.check_dataset(
        "d", {"metrics": ["king", "ibs"], "formats": ["kin0", "mdist"], "king_cutoff": 0.1}, 0.0442
    )
    assert peer_formats.output_files(
        {"formats": ["kin0", "mdist"], "king_cutoff": 0.1, "king_degrees": True}, "king"
    ) == (
        ["plink2.kin0", "degrees.tsv.gz", "king.unrelated.in.id", "king.unrelated.out.id"],
        False,
    )
    assert peer_formats.output_files({"formats": ["kin0", "mdist"]}, "ibs") == (["plink.mdist", "plink.mdist.id"], True)


@pytest.mark.parametrize("bad", ["s 1", "s\t1", "s\u00a01"])
def test_plink_outputs_refuse_an_id_with_whitespace(tmp_path, bad):
    """PLINK splits these files at whitespace (plink2 --keep would read 's 1' as two columns):
    refused by name, nothing written; snp-dists' forms and the TSVs keep IDs verbatim."""
    ids = ["a", bad, "c"]
    a, b = np.array([0, 0, 1]), np.array([1, 2, 2])
    ones = np.ones(3)
    calls = (
        lambda: peer_formats.write_kin0(tmp_path / "x.kin0", ids, a, b, ones, ones, ones, ones),
        lambda: peer_formats.write_mdist(tmp_path / "x.mdist", tmp_path / "x.mdist.id", ids, np.zeros((3, 3))),
        lambda: peer_formats.write_king_cutoff_ids(tmp_path / "i", tmp_path / "o", ids, np.ones(3, bool)),
        lambda: peer_formats.write_kin0(
            tmp_path / "y.kin0", ["a", "b", "c"], a, b, ones, ones, ones, ones, ["f", bad, "g"]
        ),
    )
    for call in calls:
        with pytest.raises(GenotileError, match=r"ID '.*' contains whitespace"):
            call()
    assert not list(tmp_path.iterdir())
    peer_formats.write_snp_dists_csv(tmp_path / "x.csv", ids, np.zeros((3, 3), dtype=np.int64))
    assert bad in (tmp_path / "x.csv").read_text()


@pytest.mark.peers  # needs plink2
@pytest.mark.parametrize("fmt", ["bed", "pgen"])
def test_kin0_of_a_samples_subset_equals_plink2_keep(genotypes_vcf, tmp_path, fmt):
    """Issue 26, goal 8: a `samples:` subset of a PLINK fileset (.bed, and the .pgen plink2 makes of
    it), every pair: the .kin0 is byte for byte `plink2 --keep <the subset> --make-king-table`'s
    of the same fileset (the list in the fileset's order, as plink2 keeps samples; nan and -inf
    pairs included; FID columns as plink2 writes them for a .fam, none for this .psam)."""
    plink("plink2", genotypes_vcf, ["--make-bed"], tmp_path / "b")
    if fmt == "pgen":
        subprocess.run(
            [
                need("plink2"),
                "--bfile",
                str(tmp_path / "b"),
                "--threads",
                "1",
                "--make-pgen",
                "--out",
                str(tmp_path / "b"),
            ],
            check=True,
            capture_output=True,
        )
    iids = [line.split("\t")[1] for line in (tmp_path / "b.fam").read_text().splitlines()]
    keep = [iid for k, iid in enumerate(iids) if k % 3 != 0]  # 26 of 40: the no-call (1) and no-het (2) samples kept
    (tmp_path / "keep.txt").write_text("".join(f"{iid}\n" for iid in keep))
    fileset = ["--bfile" if fmt == "bed" else "--pfile", str(tmp_path / "b")]  # plink2 reads what genotile reads
    run = [need("plink2"), *fileset, "--threads", "1", "--keep", str(tmp_path / "keep.txt")]
    subprocess.run([*run, "--make-king-table", "--out", str(tmp_path / "p")], check=True, capture_output=True)
    out = tmp_path / "g"
    source = tmp_path / ("b.bed" if fmt == "bed" else "b.pgen")
    pipeline.run_all(
        source,
        out,
        ["king"],
        block_size=7,
        thresholds={"king": None},
        vcf_options={"samples": str(tmp_path / "keep.txt")},
    )
    tiles = sorted((out / "king" / "pairs").glob("tile_*.npz"))
    peers.write_outputs(tiles, out / "store" / "genotype" / "manifest.json", "king", [out / "king" / "plink2.kin0"])
    theirs = (tmp_path / "p.kin0").read_bytes()
    assert theirs.count(b"\n") == 1 + 26 * 25 // 2
    assert b"\tnan\n" in theirs and b"\t-inf\n" in theirs  # the subset keeps both special cases
    assert (out / "king" / "plink2.kin0").read_bytes() == theirs
