"""Where the rules' conda envs install genotile from: the workflow's own source.

envs/*.yaml end in `pip: [${GENOTILE_SOURCE}]`; pip expands the variable when `--sdm conda`
builds an env. The Snakefile sets it (unless it is set already) to what `package_source` says
for the directory of the Snakefile that Snakemake runs, which Snakemake knows as a source file:
a clone or a module given by path (installed editable, so the env runs the code beside the
rules), a module from a git repository (`gitfile(...)`, `github(...)`, `gitlab(...)`: pip
installs that repository at the module's ref).
"""

import os
from pathlib import Path

from genotile.version import __version__

ENV_VAR = "GENOTILE_SOURCE"


def package_source(basedir) -> str:
    """The pip requirement of the genotile next to a Snakefile.

    basedir -- `workflow.current_basedir` while the Snakefile is parsed (a snakemake.sourcecache
               SourceFile, or a path)

    Falls back to the released package of this version (`genotile==X.Y.Z`) for a source pip
    cannot reach (a plain URL).
    """
    from snakemake.sourcecache import HostingProviderFile, LocalGitFile

    if isinstance(basedir, LocalGitFile):
        repo = Path(os.path.abspath(basedir.repo_path))
        return f"git+file://{repo}@{basedir.ref}" + _subdirectory(basedir.path)
    if isinstance(basedir, HostingProviderFile):
        return f"git+https://{basedir.host}/{basedir.repo}@{basedir.ref}" + _subdirectory(basedir.path)
    path = getattr(basedir, "path", basedir)
    if isinstance(path, (str, os.PathLike)) and "://" not in str(path):
        root = Path(path).resolve()
        if (root / "pyproject.toml").is_file():
            return f"-e {root}"
    return f"genotile=={__version__}"


def _subdirectory(path: str) -> str:
    path = path.strip("/")
    return f"#subdirectory={path}" if path and path != "." else ""


def export_package_source(basedir) -> str:
    """Sets $GENOTILE_SOURCE for the conda envs built by this Snakemake process, unless it is set."""
    if not os.environ.get(ENV_VAR):
        os.environ[ENV_VAR] = package_source(basedir)
    return os.environ[ENV_VAR]
