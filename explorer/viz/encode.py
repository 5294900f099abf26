"""How a heatmap's values travel to the browser: exact float32, or one byte per cell.

Shapes: values (R, C) (any 2-D block of cells). Every heatmap figure of `explorer.viz` sends its z
through `encode`, which picks one of two forms; `figure_json` writes either as a base64 typed array
(`{"dtype", "bdata", "shape"}`), which plotly.js decodes into a typed array without parsing numbers.

- **exact** (at most `EXACT_CELLS` cells): z is float32 in value units; hover prints it (`%{z:.3f}`).
  5.3 bytes of JSON per cell.
- **percent** (larger): z holds integer codes, the value in hundredths of `unit` (the largest |value|
  of the colour range): uint8 0..100 for a range [0, unit], int8 -100..100 for [-unit, unit]; 1.3 bytes
  per cell. zmin/zmax are in codes too, so the colours are those of the values rounded to 1 % of the
  range (at most 4 of 255 per colour channel away on Viridis/RdBu). The colour bar keeps value units
  (ticks placed at codes, labelled with values). The hover shows the code as a percentage with "≈":
  plotly's hover templates cannot divide, so printing the value itself would take a float32 array.

Why not float16, or 255 levels: the plotly.js that Gradio 6 bundles (3.3.1) and plotly.py's (4.1.1)
decode the dtypes u1/i1/u2/i2/u4/i4/f4/f8 only (float16 raises "Error in dtype"; checked in
tests/viz/test_viz_browser.py), and a code that is a whole percentage is what the hover can print.
Values must be finite: a non-finite one has no colour in either form, so it raises ValueError.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

EXACT_CELLS = 64 * 64  # up to this many cells (a 64-token head view) z is float32 and the hover exact
PERCENT = 100  # codes per `unit` in the percent form


@dataclass(frozen=True)
class Encoded:
    """One heatmap's z in the form it is sent, with what the hover and colour bar need."""

    z: np.ndarray  # float32 values, or uint8/int8 codes (hundredths of `unit`)
    zmin: float  # colour range, in the units of z
    zmax: float
    lo: float  # colour range, in value units
    hi: float
    unit: float  # the percent form's 100 %: max(|lo|, |hi|)
    exact: bool  # True: z holds the values

    def fields(self) -> dict[str, Any]:
        """z, zmin, zmax for the heatmap trace (zmid 0 for a symmetric range)."""
        out: dict[str, Any] = dict(z=self.z, zmin=self.zmin, zmax=self.zmax)
        if not self.exact:  # codes: the text alternative (viz.describe) reads values back as code * unit / 100
            out["meta"] = {"unit": self.unit}
        if self.lo < 0 < self.hi:
            out["zmid"] = 0.0
        return out

    def hover(self, fmt: str = ".3f") -> str:
        """Hover-template text for a cell's value: exact `%{z:<fmt>}`, or "≈ 25%" (a share: unit 1, such
        as an attention weight) / "≈ +40% of 0.031" (any other unit is named). A signed range writes the sign of
        every value, + too: the sign never rests on the colour alone."""
        if self.exact:
            return f"%{{z:{'+' if self.lo < 0 and not fmt.startswith('+') else ''}{fmt}}}"
        sign = "+" if self.lo < 0 else ""
        text = f"≈ %{{z:{sign}d}}%"
        if self.unit != 1.0:
            text += f" of {self.unit:.3g}"
        return text

    def trace(self, x: Any, y: Any, colorscale: Any, bar_title: str | None, hover: str, *, fmt: str = ".3f",
              **extra: Any) -> dict[str, Any]:
        """A heatmap trace of these values on x, y (None: cell indices); `hover` holds "{value}" where the
        value goes. bar_title None: no colour bar (showscale False).
        """
        out: dict[str, Any] = dict(type="heatmap", **self.fields())
        out.update({k: v for k, v in (("x", x), ("y", y)) if v is not None})
        out.update(colorscale=colorscale,
                   hovertemplate=hover.replace("{value}", self.hover(fmt), 1) + "<extra></extra>")
        if bar_title is None:
            out["showscale"] = False
        else:
            out["colorbar"] = self.colorbar(bar_title)
        return out | extra

    def colorbar(self, title: str) -> dict[str, Any]:
        """A colour bar labelled in value units (in the percent form: ticks at codes, value labels)."""
        bar: dict[str, Any] = dict(title=dict(text=title, side="right"), thickness=14, len=0.8)
        if not self.exact:
            ticks = nice_ticks(self.lo, self.hi)
            bar.update(tickmode="array", tickvals=[PERCENT * t / self.unit for t in ticks],
                       ticktext=[f"{t:.4g}".replace("-", "−") for t in ticks])  # plotly's minus sign
        return bar


def encode(values: np.ndarray, lo: float, hi: float, *, exact: bool | None = None, name: str = "values") -> Encoded:
    """Values (R, C) on the colour range [lo, hi] (lo = 0 or lo = -hi) in the form to send.

    exact: force a form; default exact up to EXACT_CELLS cells.
    """
    v = np.asarray(values, dtype=np.float32)
    if not np.isfinite(v).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    if not (hi > 0 and lo in (0.0, -hi)):
        raise ValueError(f"colour range must be [0, hi] or [-hi, hi] with hi > 0; got [{lo}, {hi}]")
    if exact if exact is not None else v.size <= EXACT_CELLS:
        return Encoded(v, float(lo), float(hi), float(lo), float(hi), float(hi), True)
    unit = float(hi)
    codes = np.rint(v * (PERCENT / unit))
    small = np.int8 if lo < 0 else np.uint8
    info = np.iinfo(small)
    # Values beyond the colour range keep their true code (drawn in the end colour); a wider dtype if needed.
    dtype = small if codes.min() >= info.min and codes.max() <= info.max else np.int16
    return Encoded(codes.astype(dtype), PERCENT * lo / unit, PERCENT * hi / unit, float(lo), float(hi), unit, False)


def nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """About `target` round tick values within [lo, hi] (a step of 1, 2 or 5 x 10^k)."""
    raw = (hi - lo) / max(1, target)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw - 1e-12)
    first = math.ceil(lo / step - 1e-9)
    ticks = [round(k * step, 12) for k in range(first, int(math.floor(hi / step + 1e-9)) + 1)]
    return ticks or [lo, hi]


def symmetric_range(values: np.ndarray) -> float:
    """The largest |value| (1.0 when all are 0), for a colour range [-m, m] centred on 0."""
    v = np.asarray(values)
    m = float(np.abs(v).max()) if v.size else 0.0
    return m if m > 0 else 1.0
