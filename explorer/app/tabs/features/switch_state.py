"""The Features tab's latent switches in words, kept in view beside them: which latents are switched now (they stay
from one Run to the next until cleared, or until another SAE or model is chosen, whose latents are others), and the
"Clear" that sets them back explicitly; a latent added to them (`with_switch`). Pure words here; the tab wires them
(tabs.features.tab).
"""

from __future__ import annotations

from typing import Any

from ....interpret.sae import LatentSwitch, LatentSwitches
from ...serving.errors import AppError, escape_md
from .forms import whole_or_none

NONE = "**Latent switches:** none; “Run with the switches” gives the model's own output."


def said(switch: Any) -> str:
    """One switch in words: "12 off", "40 clamped to 3.5", "7 added ×−2"."""
    if switch.mode == "off":
        return f"{switch.latent} off"
    value = f"{switch.value:g}"
    return f"{switch.latent} clamped to {value}" if switch.mode == "clamp" else f"{switch.latent} added ×{value}"


def switches_line(text: Any) -> str:
    """The line beside the switches: the latents switched now and that they stay until cleared."""
    try:
        switches = LatentSwitches.parse(str(text or ""))
    except ValueError as err:
        return f"**Latent switches:** ⚠️ {escape_md(str(err))}"
    if not switches.items:
        return NONE
    return (f"**Latent switches, kept for every Run with the switches until cleared:** "
            f"latent{'s' if len(switches.items) > 1 else ''} {', '.join(said(s) for s in switches.items)}.")


def with_switch(switches: Any, latent: Any, mode: Any, value: Any) -> str:
    """The switches text with `latent` switched as chosen (replacing a switch of the same latent); AppError if not."""
    n = whole_or_none(latent, "latent")
    if n is None:
        raise AppError("Read the features first (or type a latent), then switch it.")
    try:
        current = LatentSwitches.parse(str(switches or ""))
        new = LatentSwitch(n, str(mode or "off"), 0.0 if mode == "off" else float(value or 0))
        return LatentSwitches((*(s for s in current if s.latent != n), new)).format()
    except (TypeError, ValueError) as err:
        raise AppError(f"Latent switches: {err}") from None
