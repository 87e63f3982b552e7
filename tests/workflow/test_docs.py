"""The repository describes itself: docs/ and the README need no file outside the clone.

Every tracked text file is searched for references to a design document that lived beside
the repository (its name is spelled in pieces here so this file does not match itself), and
every relative link and repository path in README.md and docs/*.md must name a file of the
checkout (and a heading of it, for `file.md#anchor` links).
"""

import re
import subprocess
from pathlib import Path

import pytest
from snakerun import REPO

REPO = Path(REPO)
OUTSIDE = ("DESIGN" + ".md", "../" + "shared", "/work/" + "shared")
DOCS = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
REPO_PATH = re.compile(r"`((?:src|tests|bench|scripts|rules|docs|config|dev|profiles|envs|resources)/[^`\s]+)`")


def tracked_files() -> list[Path]:
    proc = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:  # not a git checkout: every file outside hidden and build folders
        skip = {".venv", ".git", "results", "logs", "benchmarks", ".snakemake", "__pycache__"}
        return [p for p in REPO.rglob("*") if p.is_file() and not skip & set(p.relative_to(REPO).parts)]
    return [REPO / name for name in proc.stdout.split("\0") if name]


def text_of(path: Path) -> str | None:
    data = path.read_bytes() if path.is_file() else b""
    if b"\0" in data[:8192]:
        return None  # binary
    return data.decode("utf-8", errors="replace")


def slug(heading: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {slug(line.lstrip("#")) for line in lines if re.match(r"#{1,6} ", line)}


def test_docs_exist():
    for name in ("metrics.md", "bitplanes.md", "pipeline.md", "ceilings.md", "gpu.md"):
        assert (REPO / "docs" / name).is_file(), f"docs/{name} is missing"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/metrics.md" in readme and "docs/pipeline.md" in readme, "the README must point to docs/"


def test_nothing_references_a_file_outside_the_repository():
    offenders = []
    for path in tracked_files():
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if any(ref in line for ref in OUTSIDE):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}")
    assert not offenders, "references to a document outside the repository:\n" + "\n".join(offenders)


@pytest.mark.parametrize("doc", DOCS)
def test_relative_links_resolve(doc):
    source = REPO / doc
    broken = []
    for target in LINK.findall(source.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        path = (source.parent / file_part).resolve() if file_part else source
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif REPO.resolve() not in path.resolve().parents and path.resolve() != REPO.resolve():
            broken.append(f"{target}: outside the repository")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.name}")
    assert not broken, f"{doc}: broken links:\n" + "\n".join(broken)


@pytest.mark.parametrize("doc", DOCS)
def test_repository_paths_exist(doc):
    """`src/...`, `tests/...`, `docs/...` and the like, written as code, name files that exist."""
    missing = []
    for name in REPO_PATH.findall((REPO / doc).read_text(encoding="utf-8")):
        if any(c in name for c in "*<>{}"):
            continue  # a pattern, not a path
        if not (REPO / name).exists():
            missing.append(name)
    assert not missing, f"{doc} names paths that do not exist: {missing}"


def test_the_checks_can_fail(tmp_path):
    """The helpers above do find what they look for."""
    page = tmp_path / "page.md"
    page.write_text("# A heading, with: punctuation\n\n[x](missing.md) [y](page.md#a-heading-with-punctuation)\n")
    assert LINK.findall(page.read_text()) == ["missing.md", "page.md#a-heading-with-punctuation"]
    assert "a-heading-with-punctuation" in anchors(page)
    assert slug("3-way CCC") == "3-way-ccc" and slug("On a SLURM cluster") == "on-a-slurm-cluster"
    assert any(ref in "see ../" + "shared/" + "DESIGN" + ".md" for ref in OUTSIDE)
