"""The Features tab's latent switches in words, kept in view beside them: which latents are switched now (they stay
from one Run to the next until cleared, or until another SAE or model is chosen, whose latents are others), and the
"Clear" that sets them back explicitly. Pure words here; the tab wires them (tabs.features.tab).
"""

from __future__ import annotations

from typing import Any

from ....interpret.sae import LatentSwitches
from ...serving.errors import escape_md

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
