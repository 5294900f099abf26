"""Colour vision: the page's colours as a reader with protanopia, deuteranopia or tritanopia sees them, and whether
the colours that carry a meaning stay apart.

    simulate("#d62728", "deuteranopia")        # -> (r, g, b) in 0..1, sRGB
    delta_e("#0072B2", "#D55E00")              # CIEDE2000 between two colours (normal vision)
    check(palette)                             # -> failures: [(vision, colour a, colour b, delta E)]
    palettes()                                 # every palette of the page, found in the code by its name

Simulation: Machado, Oliveira & Fernandes (2009), "A physiologically-based model for simulation of color vision
deficiency" (IEEE TVCG 15(6)), their matrices for severity 1.0 (the full dichromacy), applied to linear RGB (sRGB
decoded, multiplied, clipped to 0..1, encoded again). Difference: CIEDE2000 (Sharma, Wu & Dalal 2005) in CIELAB
under D65.

Threshold `MIN_DELTA_E` = 10 (CIEDE2000). A difference of about 1-2.3 is just noticeable side by side on large
patches; the page asks more, since its colours are read on small cells and thin lines, apart from each other (a
key's cell against the colour bar, a line against the legend). 10 is several times the just-noticeable difference,
and it separates the pairs that read as clearly different (the two ends of Viridis, blue against vermilion) from the
pairs that run together for a dichromat (red against green under deuteranopia: about 3-8).

What is checked (`palettes`): every module-level name in `explorer` that ends in `_SCALE` (a Plotly colour scale:
its two ends, and for a diverging scale each end against its middle), in `_COLORS` / `_COLOURS` / `PALETTE`, or
in `_PAIR` (colours that tell things apart: every two of them), and each module's `*_COLOR` constants together
(every two of one module: they are drawn on one figure). A new palette named so is checked without a change here.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

VISIONS = ("normal", "protanopia", "deuteranopia", "tritanopia")
MIN_DELTA_E = 10.0

# Machado et al. 2009, Table (severity 1.0), linear RGB -> linear RGB as the dichromat sees it.
MACHADO = {
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779],
                            [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}

_RGB = re.compile(r"rgba?\(\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*(?:,\s*([\d.]+)\s*)?\)")


def rgb(colour: str) -> np.ndarray | None:
    """"#rrggbb", "#rgb", "rgb(r, g, b)" or "rgba(r, g, b, a)" -> sRGB in 0..1; None for a transparent colour."""
    text = colour.strip().lower()
    if text.startswith("#"):
        digits = text[1:]
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        return np.array([int(digits[i:i + 2], 16) for i in (0, 2, 4)]) / 255.0
    m = _RGB.fullmatch(text)
    if not m:
        raise ValueError(f"not a colour this check reads: {colour!r}")
    if m.group(4) is not None and float(m.group(4)) == 0:
        return None
    return np.array([float(m.group(i)) for i in (1, 2, 3)]) / 255.0


def _linear(c: np.ndarray) -> np.ndarray:
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _encoded(c: np.ndarray) -> np.ndarray:
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * np.power(c, 1 / 2.4) - 0.055)


def simulate(colour: str | np.ndarray, vision: str) -> np.ndarray:
    """The sRGB colour (0..1) a reader with `vision` sees for `colour`."""
    c = rgb(colour) if isinstance(colour, str) else np.asarray(colour, dtype=float)
    if vision == "normal":
        return c
    return _encoded(np.clip(MACHADO[vision] @ _linear(c), 0.0, 1.0))


_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375],  # linear sRGB -> XYZ (D65)
                 [0.2126729, 0.7151522, 0.0721750],
                 [0.0193339, 0.1191920, 0.9503041]])
_WHITE = np.array([0.95047, 1.0, 1.08883])


def lab(c: np.ndarray) -> np.ndarray:
    """sRGB (0..1) -> CIELAB (D65)."""
    t = (_XYZ @ _linear(np.asarray(c, dtype=float))) / _WHITE
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def ciede2000(lab1: np.ndarray, lab2: np.ndarray) -> float:
    """CIEDE2000 colour difference (kL = kC = kH = 1), after Sharma, Wu & Dalal (2005)."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_bar = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_bar ** 7 / (c_bar ** 7 + 25.0 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360 if c2p else 0.0
    dl, dc = l2 - l1, c2p - c1p
    dh = 0.0
    if c1p * c2p:
        dh = h2p - h1p
        dh = dh - 360 if dh > 180 else dh + 360 if dh < -180 else dh
    d_h = 2 * np.sqrt(c1p * c2p) * np.sin(np.radians(dh / 2))
    l_bar, c_bar_p = (l1 + l2) / 2, (c1p + c2p) / 2
    if not c1p * c2p:
        h_bar = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_bar = (h1p + h2p) / 2
    else:
        h_bar = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (1 - 0.17 * np.cos(np.radians(h_bar - 30)) + 0.24 * np.cos(np.radians(2 * h_bar))
         + 0.32 * np.cos(np.radians(3 * h_bar + 6)) - 0.20 * np.cos(np.radians(4 * h_bar - 63)))
    s_l = 1 + 0.015 * (l_bar - 50) ** 2 / np.sqrt(20 + (l_bar - 50) ** 2)
    s_c = 1 + 0.045 * c_bar_p
    s_h = 1 + 0.015 * c_bar_p * t
    r_t = (-2 * np.sqrt(c_bar_p ** 7 / (c_bar_p ** 7 + 25.0 ** 7))
           * np.sin(np.radians(60 * np.exp(-(((h_bar - 275) / 25) ** 2)))))
    return float(np.sqrt((dl / s_l) ** 2 + (dc / s_c) ** 2 + (d_h / s_h) ** 2 + r_t * (dc / s_c) * (d_h / s_h)))


def delta_e(a: str, b: str, vision: str = "normal") -> float:
    """CIEDE2000 between colours `a` and `b` as a reader with `vision` sees them."""
    return ciede2000(lab(simulate(a, vision)), lab(simulate(b, vision)))


@dataclass(frozen=True)
class Palette:
    """Colours whose difference carries a meaning: `pairs` are the two colours of each pair that must stay apart."""

    name: str  # module.NAME
    pairs: tuple[tuple[str, str], ...]
    colours: tuple[str, ...] = ()  # every colour it holds


def scale_pairs(scale: Sequence[Sequence[Any]]) -> tuple[tuple[str, str], ...]:
    """A Plotly colour scale ([[position, colour], ...]) -> its ends; a diverging one (its middle colour lighter
    than both ends) also each end against the middle."""
    colours = [str(c) for _, c in scale]
    lo, hi = colours[0], colours[-1]
    mid = min(colours, key=lambda c: abs(float(_pos(scale, c)) - 0.5))
    pairs = [(lo, hi)]
    if lab(rgb(mid))[0] > max(lab(rgb(lo))[0], lab(rgb(hi))[0]) + 10:
        pairs += [(lo, mid), (mid, hi)]
    return tuple(pairs)


def _pos(scale: Sequence[Sequence[Any]], colour: str) -> float:
    return next(float(p) for p, c in scale if str(c) == colour)


def _colours(value: Any) -> list[str]:
    items = value.values() if isinstance(value, Mapping) else value
    seen: list[str] = []
    for c in items:
        if isinstance(c, str) and rgb(c) is not None and c.lower() not in (s.lower() for s in seen):
            seen.append(c)
    return seen


def _every_two(colours: Sequence[str]) -> tuple[tuple[str, str], ...]:
    return tuple((a, b) for i, a in enumerate(colours) for b in colours[i + 1:])


NAMED = re.compile(r"^((?:[A-Z][A-Z0-9_]*_)?(?:SCALE|COLOR|COLORS|COLOURS|PALETTE|PAIR))\s*(?::[^=]*)?=", re.MULTILINE)
MULTI = re.compile(r"^([A-Z][A-Z0-9_]*_COLOR)\s*,\s*([A-Z][A-Z0-9_]*_COLOR)\s*=", re.MULTILINE)  # A_COLOR, B_COLOR = ...


def palettes(root: Path | None = None, package: str = "explorer") -> list[Palette]:
    """Every palette of the package, found by name in its source (see the module's docstring)."""
    root = root or Path(__file__).resolve().parents[1]
    found: list[Palette] = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        names = NAMED.findall(source) + [n for pair in MULTI.findall(source) for n in pair]
        if not names:
            continue
        module = importlib.import_module(".".join([package, *path.relative_to(root).with_suffix("").parts]))
        singles: list[str] = []
        for name in dict.fromkeys(names):
            value = getattr(module, name, None)
            where = f"{module.__name__}.{name}"
            if name.endswith("SCALE") and isinstance(value, (list, tuple)):
                found.append(Palette(where, scale_pairs(value), tuple(str(c) for _, c in value)))
            elif name.endswith("_COLOR") and isinstance(value, str):
                singles.append(value)
            elif isinstance(value, (Mapping, list, tuple)):
                found.append(Palette(where, _every_two(_colours(value)), tuple(_colours(value))))
        singles = _colours(singles)
        if singles:  # one colour alone is listed (every colour of the page is named) with nothing to tell apart
            found.append(Palette(f"{module.__name__}.*_COLOR", _every_two(singles), tuple(singles)))
    return found


def check(palette: Palette, visions: Iterable[str] = VISIONS, minimum: float = MIN_DELTA_E
          ) -> list[tuple[str, str, str, float]]:
    """The pairs of `palette` closer than `minimum` for some vision: [(vision, a, b, delta E)]."""
    return [(v, a, b, round(d, 1)) for a, b in palette.pairs for v in visions
            if (d := delta_e(a, b, v)) < minimum]
