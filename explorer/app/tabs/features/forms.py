"""The Features tab's endpoints as typed forms (explorer.app.forms.endpoint): /features, /switch_latents and /steer,
their parameters the fields below in order; a heatmap cell clicked (`LatentClick`); and what its link keys accept
(`*_key`: link.values' contract, a value refused raises Invalid completing the notice "key 'value' ..."). Pure: no
Gradio, no model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ....interpret.sae import LatentSwitches
from ...link.values import Invalid, whole
from ...serving.errors import AppError
from ...serving.limits import MAX_NAME_CHARS
from .result import MAX_COEFFICIENT, SteerRequest
from .sae_store import SAESource, saes_for

MAX_LINK_TEXT = 2000  # characters of a contrast text in a link
NO_SAE = ("No SAE is shipped for this model. Type an SAE in the box (a folder inside an allowed folder, or a Hub "
          "repo and folder such as owner/name/path/to/sae), or steer from a contrast below: that needs no SAE.")
DEFAULT_COEFFICIENT = 4.0


def whole_or_none(value: Any, what: str) -> int | None:
    """A page number field's value as an int (empty: None); AppError naming `what` for anything but a whole number."""
    if value is None or value == "":
        return None
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not number.is_integer():
        raise AppError(f"The {what} must be a whole number, got {str(value)[:20]!r}.")
    return int(number)


@dataclass(frozen=True)
class LatentClick:
    """A heatmap cell clicked: the page script writes "latent|time" (the time makes a second click a change)."""

    latent: int
    stamp: str

    @classmethod
    def parse(cls, text: Any) -> "LatentClick":
        """ValueError for anything the script does not write."""
        latent, bar, stamp = str(text or "").partition("|")
        if not bar or not latent.isdigit():
            raise ValueError(f"not a clicked latent: {str(text)[:40]!r}")
        return cls(int(latent), stamp)


def sae_source(session: Any, text: Any, allowed_dirs: tuple[str, ...]) -> SAESource | None:
    """The SAE typed or chosen; blank: the model's first shipped SAE; None when it has none."""
    name = str(text or "").strip()
    if not name:
        shipped = saes_for(session.source)
        if not shipped:
            return None
        name = shipped[0]
    return SAESource.of(name, allowed_dirs)


@dataclass(frozen=True)
class FeatureForm:
    """/features: sentence 1 read through an SAE, and one latent's dashboard (blank: the strongest at the end)."""

    session: Any
    sentence1: Any
    sae: Any = ""
    latent: Any = None
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)


def read_key(session: Any, sentence1: Any, sae: Any) -> str:
    """What a reading depends on besides its latent: the model, sentence 1 and the SAE (tab.auto_read)."""
    return f"{getattr(session, 'key', '')}|{sae or ''}|{sentence1 or ''}"


@dataclass(frozen=True)
class SwitchForm:
    """/switch_latents: the output of sentence 1, baseline vs the latents switched ("12:off,40:clamp=3.5,7:add=-2")."""

    session: Any
    sentence1: Any
    sae: Any = ""
    switches: Any = ""
    continue_tokens: Any = None
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)


@dataclass(frozen=True)
class SteerForm:
    """/steer: the output of sentence 1, baseline vs coefficient x (residual of `toward` (blank: sentence 1) −
    residual of `contrast`) added at the input of `layer`, every position."""

    session: Any
    sentence1: Any
    contrast: Any
    toward: Any = ""
    layer: Any = 0
    coefficient: Any = DEFAULT_COEFFICIENT
    continue_tokens: Any = None
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)

    def request(self) -> SteerRequest:
        try:
            coefficient = float(DEFAULT_COEFFICIENT if self.coefficient in (None, "") else self.coefficient)
        except (TypeError, ValueError):
            raise AppError(f"The coefficient must be a number, got {str(self.coefficient)[:20]!r}.") from None
        return SteerRequest(str(self.sentence1 or ""), str(self.toward or ""), str(self.contrast or ""),
                            whole_or_none(self.layer, "layer") or 0, coefficient,
                            whole_or_none(self.continue_tokens, "number of tokens"))


# ----------------------------------------------------------------------------------------------- link keys
def sae_key(text: str, check_model: Any) -> str:
    """An SAE name as typed (checked against the allow-list when the link is restored: FeaturesTab.restore_link)."""
    name = text.strip()
    if not name or len(name) > MAX_NAME_CHARS or any(ord(ch) < 32 for ch in name):
        raise Invalid("is not an SAE name")
    return name


def latent_key(text: str, check_model: Any) -> int:
    return whole(text, 0, 10**8)


def switches_key(text: str, check_model: Any) -> str:
    try:
        return LatentSwitches.parse(text).format()
    except ValueError as err:
        raise Invalid(f"are not latent switches: {err}") from None


def text_key(text: str, check_model: Any) -> str:
    if len(text) > MAX_LINK_TEXT:
        raise Invalid(f"is longer than {MAX_LINK_TEXT:,} characters")
    return text


def layer_key(text: str, check_model: Any) -> int:
    return whole(text, 0, 999)


def coefficient_key(text: str, check_model: Any) -> float:
    try:
        value = float(text)
    except ValueError:
        raise Invalid("is not a number") from None
    if not abs(value) <= MAX_COEFFICIENT:
        raise Invalid(f"is not between −{MAX_COEFFICIENT:g} and {MAX_COEFFICIENT:g}")
    return value
