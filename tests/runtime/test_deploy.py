"""Where the conda envs install genotile from (runtime/deploy.py), for each way Snakemake can
have read the Snakefile."""

import os

import pytest
from snakemake.sourcecache import GithubFile, GitlabFile, LocalGitFile, LocalSourceFile
from snakerun import REPO

from genotile import __version__
from genotile.runtime import deploy


def test_a_checkout_or_module_path_is_installed_editable():
    assert deploy.package_source(LocalSourceFile(str(REPO))) == f"-e {REPO.resolve()}"
    assert deploy.package_source(str(REPO)) == f"-e {REPO.resolve()}"


def test_a_directory_without_the_package_falls_back_to_the_release(tmp_path):
    assert deploy.package_source(LocalSourceFile(str(tmp_path))) == f"genotile=={__version__}"
    assert deploy.package_source("https://example.org/genotile") == f"genotile=={__version__}"


def test_a_local_git_module_is_installed_from_its_repository_at_its_ref(tmp_path):
    snakefile = LocalGitFile(str(tmp_path), "Snakefile", tag="v1.2.0")
    assert deploy.package_source(snakefile.get_basedir()) == f"git+file://{tmp_path}@v1.2.0"
    nested = LocalGitFile(str(tmp_path), "pipelines/genotile/Snakefile", commit="abc123")
    assert (
        deploy.package_source(nested.get_basedir()) == f"git+file://{tmp_path}@abc123#subdirectory=pipelines/genotile"
    )


def test_a_hosted_git_module_is_installed_from_its_host_at_its_ref():
    # the constructors reach no network; only fetching the file would
    github = GithubFile("someone/genotile", path="Snakefile", tag="v0.1.0")
    assert deploy.package_source(github.get_basedir()) == "git+https://github.com/someone/genotile@v0.1.0"
    gitlab = GitlabFile("group/genotile", path="workflow/Snakefile", branch="main")
    assert (
        deploy.package_source(gitlab.get_basedir())
        == "git+https://gitlab.com/group/genotile@main#subdirectory=workflow"
    )


def test_export_keeps_a_source_the_user_set(monkeypatch):
    monkeypatch.setenv(deploy.ENV_VAR, "genotile==0.1.0")
    assert deploy.export_package_source(LocalSourceFile(str(REPO))) == "genotile==0.1.0"
    monkeypatch.delenv(deploy.ENV_VAR)
    assert deploy.export_package_source(LocalSourceFile(str(REPO))) == f"-e {REPO.resolve()}"
    assert os.environ[deploy.ENV_VAR] == f"-e {REPO.resolve()}"


@pytest.mark.parametrize("name", ["cpu.yaml", "gpu.yaml", "report.yaml"])
def test_pip_expands_the_variable_the_envs_name(name, monkeypatch):
    """conda hands the envs' `pip:` lines to pip as a requirements file; pip expands ${VAR}."""
    from pip._internal.req.req_file import preprocess

    text = (REPO / "envs" / name).read_text()
    line = text.split("- pip:\n", 1)[1].strip().lstrip("- ").strip()
    monkeypatch.setenv(deploy.ENV_VAR, "-e /some/checkout")
    assert [content for _, content in preprocess(line)] == ["-e /some/checkout"]
