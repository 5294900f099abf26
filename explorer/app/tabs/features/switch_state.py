"""The Features tab's latent switches in words, kept in view beside them: which latents are switched now (they stay
from one Run to the next until cleared, or until another SAE or model is chosen, whose latents are others), and the
"Clear" that sets them back explicitly; a latent added to them (`with_switch`). Pure words here, in the page's
language (i18n: `result.features.switches_*`); the tab wires them (tabs.features.tab).
"""

from __future__ import annotations

from typing import Any

from ....interpret.sae import LatentSwitch, LatentSwitches
from ...i18n.messages import message_in
from ...i18n.words import number, t
from ...serving.errors import AppError, escape_md
from .forms import whole_or_none

NONE = t("result.features.switches_none")


def said(switch: Any, lang: Any = "en") -> str:
    """One switch in words: "12 off", "40 clamped to 3.5", "7 added ×−2" (in `lang`: "40 fixé à 3,5")."""
    if switch.mode == "off":
        return t("result.features.off", lang, n=switch.latent)
    value = f"{switch.value:g}" if "e" in f"{switch.value:g}" else number(switch.value, lang, max_digits=6)
    return t(f"result.features.{'clamped' if switch.mode == 'clamp' else 'added'}", lang, n=switch.latent,
             value=value)


def switches_line(text: Any, lang: Any = "en") -> str:
    """The line beside the switches, in the page's language `lang`: the latents switched now and that they stay until
    cleared."""
    try:
        switches = LatentSwitches.parse(str(text or ""))
    except ValueError as err:
        return t("result.features.switches_bad", lang, why=escape_md(message_in(str(err), lang)))
    if not switches.items:
        return t("result.features.switches_none", lang)
    latents = t(f"result.features.{'latents' if len(switches.items) > 1 else 'one_latent'}", lang,
                said=", ".join(said(s, lang) for s in switches.items))
    return t("result.features.switches_kept", lang, latents=latents)


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
