"""Hypothesis strategies shared by the property tests."""

import numpy as np
from hypothesis import strategies as st

from genotile.core.encode import MISSING

MISSING_PATTERNS = ["none", "random", "dense", "whole_vectors", "whole_fields"]


@st.composite
def genotype_codes(draw, max_vectors=12, max_fields=150):
    """(vectors, fields) uint8 codes 0/1/2/MISSING under one of several missing patterns."""
    n = draw(st.integers(1, max_vectors))
    m = draw(st.integers(1, max_fields))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    freq = rng.uniform(0, 1, size=m) if draw(st.booleans()) else np.full(m, draw(st.sampled_from([0.0, 0.5, 1.0])))
    codes = rng.binomial(2, freq[None, :], size=(n, m)).astype(np.uint8)
    pattern = draw(st.sampled_from(MISSING_PATTERNS))
    if pattern == "random":
        codes[rng.random((n, m)) < 0.1] = MISSING
    elif pattern == "dense":
        codes[rng.random((n, m)) < 0.7] = MISSING
    elif pattern == "whole_vectors":
        codes[rng.random(n) < 0.3] = MISSING
    elif pattern == "whole_fields":
        codes[:, rng.random(m) < 0.3] = MISSING
    return codes
