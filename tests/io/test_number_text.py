"""number_text (and text_kernels' compiled float_text) against str and repr, byte for byte,
on values of many kinds: uniform bits, kinship-like ratios, values next to powers of ten and
two, integers as floats, short decimals, subnormals, huge, negative, -0.0, nan, inf."""

import numpy as np
import pytest

from genotile.io import number_text

try:
    from genotile.io import text_kernels
except ImportError:  # no numba
    text_kernels = None

WAYS = ["numpy"] + (["compiled"] if text_kernels is not None else [])
N = 20_000
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
            1.7976931348623157e308, 1e-05, 0.0001, 1e-4, 9.999999999999999e-05, 1e16, 1e15, 9999999999999998.0,
            1.5e16, 123.0, 0.1, 0.2, 0.3, 1 / 3, 2.0**53, 2.0**53 + 2, 2.0**63, 1e22, 1e23, 1e-7, 1e-6, 5e-7,
            9007199254740993.0, 123456789012345678.0, 0.5, 0.25, -1.0, 100.0, 1e100, 1e-100, 1e300]  # fmt: skip


def kinds(rng) -> dict[str, np.ndarray]:
    e = rng.integers(-25, 25, N)
    toward = np.where(rng.random(N) < 0.5, np.inf, -np.inf)
    sign = rng.choice([-1.0, 1.0], N)
    return {
        "specials": np.array(SPECIALS * 10),
        "bits": rng.integers(0, 2**64, N, dtype=np.uint64).view(np.float64),
        "uniform": rng.random(N),
        "kinship": (rng.integers(-3000, 3000, N) - 2 * rng.integers(0, 3000, N)) / (2.0 * rng.integers(1, 50000, N)),
        "ratios": rng.integers(-50, 50, N) / rng.integers(1, 64, N),
        "log_uniform": sign * 10.0 ** rng.uniform(-30, 30, N),
        "near_powers_of_ten": sign * np.nextafter(10.0**e, toward),
        "powers_of_ten": sign * 10.0**e,
        "near_powers_of_two": sign * np.nextafter(2.0 ** rng.integers(-80, 80, N), toward),
        "powers_of_two": 2.0 ** rng.integers(-1074, 1024, N),
        "integers": rng.integers(-(10**17), 10**17, N).astype(np.float64),
        "near_2_53": (2**53 + rng.integers(-1000, 1000, N)).astype(np.float64),
        "short_decimals": sign * rng.integers(1, 10**6, N) / 10.0 ** rng.integers(0, 12, N),
        "float32": rng.standard_normal(N).astype(np.float32).astype(np.float64),
        "subnormal": sign * rng.integers(1, 2**52, N).astype(np.float64) * 2.0**-1074,
        "huge": sign * rng.random(N) * 1.7e308,
        "scaled_normal": rng.standard_normal(N) * 10.0 ** rng.integers(-8, 20, N),
    }


def texts(chars: np.ndarray, lengths: np.ndarray) -> list[str]:
    assert chars.dtype == np.uint8 and chars.shape[0] == lengths.size
    # nothing past each text: the zero padding matrix_tsv's masks and format_column rely on
    assert not np.any(chars[np.arange(chars.shape[1])[None, :] >= lengths[:, None]])
    return [bytes(row[:n]).decode("ascii") for row, n in zip(chars, lengths.tolist(), strict=True)]


@pytest.mark.parametrize("way", WAYS)
def test_float_text_is_repr(way):
    fmt = number_text.float_text if way == "numpy" else text_kernels.float_text
    rng = np.random.default_rng(16)
    for name, values in kinds(rng).items():
        expected = [repr(v) for v in values.tolist()]
        got = texts(*fmt(values))
        bad = [(v, e, g) for v, e, g in zip(values.tolist(), expected, got, strict=True) if e != g]
        assert not bad, (name, len(bad), bad[:5])


def test_float_text_shapes_and_float32():
    chars, lengths = number_text.float_text(np.zeros(0))
    assert chars.shape == (0, number_text.FLOAT_WIDTH) and lengths.shape == (0,)
    values = np.array([[0.1, 3.4e38], [-1e-45, 2.5]], dtype=np.float32)  # repr(float(v)) of each
    assert texts(*number_text.float_text(values)) == [repr(float(v)) for v in values.ravel().tolist()]


def test_int_text_is_str():
    rng = np.random.default_rng(3)
    info = np.iinfo(np.int64)
    cases = [
        np.array([0, 1, -1, 9, 10, -10, 99, 100, info.min, info.max, info.min + 1]),
        rng.integers(info.min, info.max, N, dtype=np.int64),
        rng.integers(-1000, 1000, N).astype(np.int16),
        10 ** rng.integers(0, 19, N) - rng.integers(0, 2, N),
        np.array([0, 1, 2**63, 2**64 - 1, 10**19, 10**19 - 1], dtype=np.uint64),
        rng.integers(0, 2**64, N, dtype=np.uint64),
        np.zeros(0, dtype=np.int64),
    ]
    for values in cases:
        assert texts(*number_text.int_text(values)) == [str(v) for v in values.tolist()]
