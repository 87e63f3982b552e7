"""tile_select's launch arguments: SelectParams (select_params.py) and struct SelectParams
(kernels/select_params.cuh) have the same fields, in the same order, at the same offsets.

On the CPU: the numpy dtype against the C struct's declaration, laid out by C's rules (each
member at a multiple of its alignment, the struct a multiple of its largest), and `packed()`
holding every field. On a GPU: a kernel compiled from the header writes sizeof, offsetof and
the bytes of the struct it received by value, which must be the dtype's and `packed()`'s.
"""

import re

import numpy as np
import pytest

from genotile.backends.cuda import cupy_common
from genotile.backends.cuda.select_params import MAX_COUNTS, STRUCT, SelectParams, address

KERNELS = cupy_common.KERNEL_DIR
needs_gpu = pytest.mark.skipif(
    not cupy_common.has_gpu(), reason="no CUDA GPU / CuPy: the kernel's layout is not testable here"
)

SCALARS = {"i64": (8, "<i8"), "u64": (8, "<u8"), "int": (4, "<i4"), "double": (8, "<f8")}


def c_structs() -> dict[str, list[tuple[str, str, int]]]:
    """{struct: [(member, C type, array length or 0)]} of the headers SelectParams is built of."""
    text = (KERNELS / "epilogues" / "epilogue.cuh").read_text() + (KERNELS / "select_params.cuh").read_text()
    text = re.sub(r"//[^\n]*", "", text).replace("GT_MAX_COUNTS", str(MAX_COUNTS))
    structs = {}
    for name, body in re.findall(r"struct (\w+) \{([^}]*)\};", text):
        members = []
        for decl in body.split(";"):
            m = re.fullmatch(r"\s*(?:const )?([\w ]+?)\s*(\*?)\s*(\w+)(?:\[(\d+)\])?\s*", decl)
            if m:
                ctype = "pointer" if m.group(2) else m.group(1)
                members.append((m.group(3), ctype, int(m.group(4) or 0)))
        structs[name] = members
    return structs


def c_layout(structs, name) -> tuple[list[tuple[str, int]], int, int]:
    """([(member, offset)], size, alignment) of struct `name` by C's layout rules."""
    offset, align, out = 0, 1, []
    for member, ctype, count in structs[name]:
        if ctype == "pointer":
            size = a = 8
        elif ctype in SCALARS:
            size = a = SCALARS[ctype][0]
        else:
            _, size, a = c_layout(structs, ctype)
        offset = -(-offset // a) * a
        out.append((member, offset))
        offset += size * max(count, 1)
        align = max(align, a)
    return out, -(-offset // align) * align, align


def test_the_dtype_is_the_c_struct():
    structs = c_structs()
    assert set(structs) >= {"SelectParams", "CountSource", "MetricParams"}
    members, size, _ = c_layout(structs, "SelectParams")
    assert list(STRUCT.names) == [m for m, _ in members]
    assert [STRUCT.fields[m][1] for m in STRUCT.names] == [o for _, o in members]
    assert STRUCT.itemsize == size
    for member, ctype, count in structs["SelectParams"]:
        dtype = STRUCT.fields[member][0]
        base = dtype.base if count else dtype
        assert dtype.shape == ((count,) if count else ()), member
        if ctype == "pointer":
            assert base == np.dtype("<u8"), member
        elif ctype in SCALARS:
            assert base == np.dtype(SCALARS[ctype][1]), member
        else:  # a nested struct: its members and offsets too
            nested, nested_size, _ = c_layout(structs, ctype)
            assert [(n, base.fields[n][1]) for n in base.names] == nested and base.itemsize == nested_size, member


def distinct_params() -> SelectParams:
    """Every field a value no other field has (pointers as addresses)."""
    return SelectParams(
        i0=1,
        j0=2,
        n_total=3,
        ms=4,
        ns=5,
        diag=True,
        mode=7,
        has_thr=True,
        dense_col=9,
        thr=10.5,
        metric=(11.25, 12.125),
        counter=13,
        idx=14,
        cols=15,
        cap=16,
        dense=17,
        hist=18,
        hspec=19,
        hoff=20,
        hist_base=21,
        perm_l=22,
        perm_r=23,
        hist_total=24,
        hist_mask=25,
        win=26,
        counts=((27, 28, 29), (None, 30, None)),
    )


def test_packed_holds_every_field():
    arg = distinct_params().packed()
    assert arg.shape == () and arg.dtype == STRUCT
    assert [int(arg[f]) for f in ("i0", "j0", "n_total", "ms", "ns", "diag", "mode", "has_thr", "dense_col")] == [
        1,
        2,
        3,
        4,
        5,
        1,
        7,
        1,
        9,
    ]
    assert float(arg["thr"]) == 10.5 and arg["metric"].item() == (11.25, 12.125)
    pointers = ("counter", "idx", "cols", "dense", "hist", "hspec", "hoff", "hist_base", "perm_l", "perm_r")
    assert [int(arg[f]) for f in pointers] == [13, 14, 15, 17, 18, 19, 20, 21, 22, 23]
    assert [int(arg[f]) for f in ("cap", "hist_total", "hist_mask", "win")] == [16, 24, 25, 26]
    assert [tuple(int(v) for v in c) for c in arg["counts"]] == [(27, 28, 29), (0, 30, 0)] + [(0, 0, 0)] * 6
    assert SelectParams().packed().tobytes() == bytes(STRUCT.itemsize)  # defaults: zeros and null pointers


def test_packed_refuses_more_counts_than_the_kernel_reads():
    with pytest.raises(ValueError, match="at most"):
        SelectParams(counts=((0, 0, 0),) * (MAX_COUNTS + 1)).packed()


def test_address_of_arrays_addresses_and_none():
    class Memory:
        ptr = 4096

    class DeviceArray:
        data = Memory()

    assert [address(None), address(7), address(np.uint64(8)), address(DeviceArray())] == [0, 7, 8, 4096]


@needs_gpu
def test_the_kernel_sees_the_dtype_layout_and_the_packed_bytes():
    cp = cupy_common.cupy_module()
    members = [n for n in STRUCT.names if n != "counts"]
    members += [f"counts[{k}].{part}" for k in range(MAX_COUNTS) for part in ("mat", "lvec", "rvec")]
    code = cupy_common.kernel_source("select_params.cuh") + (
        '\nextern "C" __global__ void layout(const SelectParams p, unsigned long long* out, unsigned char* bytes) {\n'
        "    const char* base = reinterpret_cast<const char*>(&p);\n"
        "    out[0] = sizeof(SelectParams);\n"
        + "".join(f"    out[{k + 1}] = reinterpret_cast<const char*>(&p.{m}) - base;\n" for k, m in enumerate(members))
        + "    for (unsigned k = 0; k < sizeof(SelectParams); ++k) bytes[k] = base[k];\n}\n"
    )
    kernel = cp.RawModule(code=code, options=("--std=c++17",)).get_function("layout")
    out = cp.zeros(len(members) + 1, dtype=cp.uint64)
    got = cp.zeros(STRUCT.itemsize, dtype=cp.uint8)
    arg = distinct_params().packed()
    kernel((1,), (1,), (arg, out, got))
    sizes = out.get().tolist()
    count = STRUCT.fields["counts"]
    want = [STRUCT.fields[m][1] for m in STRUCT.names if m != "counts"]
    want += [
        count[1] + k * count[0].base.itemsize + count[0].base.fields[part][1]
        for k in range(MAX_COUNTS)
        for part in ("mat", "lvec", "rvec")
    ]
    assert sizes == [STRUCT.itemsize, *want]
    assert got.get().tobytes() == arg.tobytes()
