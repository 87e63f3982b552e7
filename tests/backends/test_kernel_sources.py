"""The CUDA sources as NVRTC gets them: kernels/*.cu with their headers (select_params.cuh, one
epilogue header a fused metric under epilogues/) written in place, so that CuPy's kernel cache,
keyed on the source, sees a header's edit; and every source file shipped with the package."""

import fnmatch
import re
from pathlib import Path

import pytest

from genotile.backends.cuda import cupy_common

KERNELS = cupy_common.KERNEL_DIR
REPO = Path(__file__).resolve().parents[2]
EPILOGUES = sorted((KERNELS / "epilogues").glob("*.cuh"))


def test_tile_select_source_holds_each_header_once_and_no_include():
    source = cupy_common.kernel_source("tile_select.cu")
    assert not re.search(r'^\s*#\s*include\s+"', source, re.M)
    for header in [KERNELS / "select_params.cuh", *EPILOGUES]:
        name = header.relative_to(KERNELS).as_posix()
        assert source.count(f'#line 1 "{name}"\n') == 1, name
        for piece in re.split(r'^#include "[^"]+"\n', header.read_text(), flags=re.M):  # its own lines, in place
            assert piece in source, name
    # back on tile_select.cu's own line after each include: its kernel's line numbers are its own
    lines = source.splitlines()
    at = lines.index('extern "C" __global__ void __launch_bounds__(256) tile_select(const SelectParams p) {')
    directive = max(k for k in range(at) if lines[k].startswith("#line"))
    number, name = re.fullmatch(r'#line (\d+) "([^"]+)"', lines[directive]).groups()
    own = (KERNELS / "tile_select.cu").read_text().splitlines()
    assert name == "tile_select.cu" and own[int(number) - 1 + at - directive - 1] == lines[at]


def test_a_source_without_includes_is_its_text():
    text = (KERNELS / "bitplane_utils.cu").read_text()
    assert cupy_common.kernel_source("bitplane_utils.cu") == '#line 1 "bitplane_utils.cu"\n' + text


def test_one_epilogue_a_fused_id():
    ids = []
    for header in EPILOGUES:
        found = re.findall(r"template <>\s+struct Epilogue<(\d+)>", header.read_text())
        assert len(found) <= 1, header.name
        ids += found
    assert sorted(ids, key=int) == [str(k) for k in range(len(ids))]
    assert len(ids) == len(EPILOGUES) - 1  # and epilogue.cuh, what they share


def test_package_data_ships_every_kernel_source():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["genotile"]
    package = REPO / "src" / "genotile"
    for path in KERNELS.rglob("*"):
        if path.is_file() and path.suffix in (".cu", ".cuh"):
            rel = path.relative_to(package).as_posix()
            assert any(fnmatch.fnmatch(rel, g) and rel.count("/") == g.count("/") for g in globs), rel


def test_b1_select_has_the_mma_core_in_both_main_loops():
    """kernel_source writes a header in place once, whatever the #if around its include: b1_select.cu
    includes b1_mma_core.cuh before `#if GT_WGMMA` (whose b1_wgmma.cuh includes it again, dropped),
    so that mma.sync's build (GT_WGMMA 0) has it too."""
    source = cupy_common.kernel_source("b1_select.cu")
    lines = source.splitlines()
    core = lines.index("#define GT_B1_MMA_CORE_CUH")
    wgmma_if = lines.index("#if GT_WGMMA")
    assert core < wgmma_if < lines.index("#define GT_B1_WGMMA_CUH")
    assert source.count('#line 1 "b1_mma_core.cuh"\n') == 1 and source.count('#line 1 "b1_wgmma.cuh"\n') == 1


def _compiled_lines(source: str, wgmma: int) -> list[str]:
    """The lines of `source` (comments cut) that a build with GT_WGMMA = `wgmma` compiles, as far
    as `#if GT_WGMMA` and `#if !GT_WGMMA` decide; any other condition is taken as true, both of its
    branches kept (more lines than any build has)."""
    out: list[str] = []
    stack: list[list[bool]] = []  # each #if: [its branch taken, decided by GT_WGMMA]
    for line in source.splitlines():
        code = line.split("//")[0]
        directive = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", code)
        if directive is None:
            if all(taken for taken, _ in stack):
                out.append(code)
            continue
        kind, condition = directive.group(1), directive.group(2).strip()
        if kind in ("if", "ifdef", "ifndef"):
            decided = kind == "if" and condition in ("GT_WGMMA", "!GT_WGMMA")
            stack.append([not decided or bool(wgmma) == (condition == "GT_WGMMA"), decided])
        elif kind in ("else", "elif"):
            stack[-1][0] = not stack[-1][0] if stack[-1][1] else True
        else:
            stack.pop()
    assert not stack, "an #if without its #endif"
    return out


WGMMA_CODE = re.compile(r"wgmma\.|fence\.proxy\.async|\bwgmma_\w+\s*[<(]")


@pytest.mark.parametrize("name", ["ccc3_fused.cu", "b1_select.cu"])
def test_wgmma_is_compiled_only_in_the_gt_wgmma_build(name):
    """ccc3_fused.cu and b1_select.cu are built twice: by CuPy's RawModule for any GPU (GT_WGMMA 0),
    and for sm_90a (GT_WGMMA 1, Hopper). wgmma's PTX assembles for sm_90a alone, so the plain build
    has none of it, nor a call of wgmma.cuh's helpers; ccc3's sm_90a build holds its wgmma kernel
    alone (NVRTC's time), its plain build the mma.sync kernels."""
    source = cupy_common.kernel_source(name)
    plain, hopper = ("\n".join(_compiled_lines(source, w)) for w in (0, 1))
    assert not WGMMA_CODE.search(plain), WGMMA_CODE.search(plain)
    assert WGMMA_CODE.search(hopper)
    if name == "ccc3_fused.cu":
        kernels = re.compile(r'extern "C" __global__ void __launch_bounds__\([^)]*\) (\w+)\(')
        assert kernels.findall(plain) == ["ccc3_fused", "ccc3_fused_streamed"]
        assert kernels.findall(hopper) == ["ccc3_fused_wgmma"]
