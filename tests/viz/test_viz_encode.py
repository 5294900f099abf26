"""The two forms heatmap values are sent in: exact float32, and percent codes (one byte per cell)."""

import numpy as np
import pytest

from explorer.viz.encode import EXACT_CELLS, encode, nice_ticks, symmetric_range


def test_small_arrays_stay_exact_float32():
    v = np.random.default_rng(0).random((64, 64))
    assert v.size == EXACT_CELLS
    enc = encode(v, 0.0, 1.0)
    assert enc.exact and enc.z.dtype == np.float32
    np.testing.assert_array_equal(enc.z, v.astype(np.float32))
    assert (enc.zmin, enc.zmax) == (0.0, 1.0)
    assert enc.hover() == "%{z:.3f}" and enc.hover("+.2f") == "%{z:+.2f}"
    assert encode(v - 0.5, -0.5, 0.5).hover() == "%{z:+.3f}"  # a signed range writes + as well as −
    assert "tickvals" not in enc.colorbar("weight")  # plotly's own ticks, in value units


def test_large_weights_become_uint8_percent_codes():
    v = np.random.default_rng(1).random((65, 64))
    enc = encode(v, 0.0, 1.0)
    assert not enc.exact and enc.z.dtype == np.uint8
    assert np.abs(enc.z / 100 - v).max() <= 0.005 + 1e-7  # rounded to the nearest percent
    assert (enc.zmin, enc.zmax) == (0.0, 100.0)  # the colour range in codes: colours of the rounded values
    assert enc.hover() == "≈ %{z:d}%"  # a share: no "of 1"


def test_signed_range_uses_int8_and_names_the_unit():
    v = np.linspace(-0.031, 0.02, 100 * 50).reshape(100, 50)
    m = symmetric_range(v)
    enc = encode(v, -m, m)
    assert enc.z.dtype == np.int8 and enc.z.min() == -100 and enc.z.max() == 65
    assert (enc.zmin, enc.zmax) == (-100.0, 100.0) and enc.fields()["zmid"] == 0.0
    assert enc.hover() == "≈ %{z:+d}% of 0.031"


def test_colour_bar_keeps_value_units():
    enc = encode(np.zeros((100, 100)), -0.031, 0.031)
    bar = enc.colorbar("a − b")
    assert bar["ticktext"] == ["−0.02", "0", "0.02"]  # plotly's minus sign
    np.testing.assert_allclose(bar["tickvals"], [100 * t / 0.031 for t in (-0.02, 0, 0.02)])
    weights = encode(np.zeros((100, 100)), 0.0, 1.0).colorbar("weight")
    assert weights["ticktext"] == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
    assert weights["tickvals"] == pytest.approx([0, 20, 40, 60, 80, 100])


def test_values_beyond_the_range_keep_their_code():
    v = np.full((100, 100), 0.5)
    v[0, 0] = 3.0
    enc = encode(v, 0.0, 1.0)
    assert enc.z.dtype == np.int16 and enc.z[0, 0] == 300 and enc.z[1, 1] == 50


def test_forced_form_and_errors():
    assert encode(np.zeros((2, 2)), 0.0, 1.0, exact=False).z.dtype == np.uint8
    assert encode(np.zeros((100, 100)), 0.0, 1.0, exact=True).exact
    with pytest.raises(ValueError, match="weights must be finite"):
        encode(np.array([[np.nan]]), 0.0, 1.0, name="weights")
    with pytest.raises(ValueError, match="colour range"):
        encode(np.zeros((2, 2)), 0.2, 1.0)


def test_trace_puts_the_value_text_into_the_hover():
    tr = encode(np.zeros((100, 100)), 0.0, 1.0).trace(["a"], ["b"], "Viridis", None, "%{y}: {value} (x)")
    assert tr["hovertemplate"] == "%{y}: ≈ %{z:d}% (x)<extra></extra>" and tr["showscale"] is False
    assert "x" in tr and "colorbar" not in tr
    assert "x" not in encode(np.zeros((2, 2)), 0.0, 1.0).trace(None, None, "Viridis", "v", "{value}")


@pytest.mark.parametrize("lo, hi, want", [
    (0.0, 1.0, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    (0.0, 0.062, [0, 0.02, 0.04, 0.06]),
    (0.0, 0.5, [0, 0.1, 0.2, 0.3, 0.4, 0.5]),
    (-4.0, 4.0, [-4, -2, 0, 2, 4]),
    (0.0, 7.3, [0, 2, 4, 6]),
])
def test_nice_ticks(lo, hi, want):
    assert nice_ticks(lo, hi) == pytest.approx(want)


def test_symmetric_range():
    assert symmetric_range(np.array([0.1, -0.4])) == pytest.approx(0.4)
    assert symmetric_range(np.zeros(3)) == 1.0
