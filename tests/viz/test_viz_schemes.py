"""Figures of the rotary and relative schemes: right traces, values and axes, clear errors for wrong shapes."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.viz.schemes import relative_bias_heatmap, rotary_distance_chart, rotary_frequency_chart


def test_rotary_frequency_chart():
    freq = 1.0 / 10000 ** (np.arange(0, 16, 2) / 16)
    fig = rotary_frequency_chart(freq)
    trace = fig.data[0]
    assert np.allclose(trace.y, freq) and fig.layout.yaxis.type == "log"
    assert np.allclose(trace.customdata, 2 * np.pi / freq)
    with pytest.raises(ValueError, match="positive"):
        rotary_frequency_chart(np.array([1.0, 0.0]))


def test_rotary_distance_chart():
    fig = rotary_distance_chart(np.arange(5), np.linspace(1, 0.5, 5))
    assert list(fig.data[0].x) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="equal length"):
        rotary_distance_chart(np.arange(5), np.ones(4))


def test_relative_bias_heatmap():
    bias = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    fig = relative_bias_heatmap(bias, np.array([-2, -1, 0, 1]))
    heat = fig.data[0]
    assert list(heat.x) == [-2, -1, 0, 1] and list(heat.y) == ["head 0", "head 1", "head 2"]
    assert np.array_equal(np.asarray(heat.z), bias) and heat.zmid == 0
    with pytest.raises(ValueError):
        relative_bias_heatmap(bias, np.array([0, 1]))
