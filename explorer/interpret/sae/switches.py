"""Latent switches: which SAE latents to switch off, clamp or add, small and validated, written as a link-friendly
string so a shared link carries them.

    "12:off,40:clamp=3.5,7:add=-2"      latent 12 off, latent 40 clamped to 3.5, latent 7 added with coefficient -2

    off        the latent's activation set to 0 at every position: its decoder contribution removed
    clamp=v    its activation set to v at every position (in the SAE's latent units)
    add=c      c times its decoder row W_dec[i] added to the residual stream at every position (Neuronpedia's Steer,
               "SIMPLE_ADDITIVE": strength x the feature's decoder vector, in the model's units)

The switches are kept sorted by latent (one switch per latent), so equal switches format to equal strings; values are
finite floats written in Python's shortest round-tripping form ("3.5", "-2", "1e-05").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MODES = ("off", "clamp", "add")
MAX_SWITCHES = 64  # a link carries at most this many
ITEM = re.compile(r"^\s*(\d{1,9})\s*:\s*(off|clamp|add)\s*(?:=\s*([^,]*?))?\s*$")


@dataclass(frozen=True)
class LatentSwitch:
    latent: int
    mode: str  # "off" | "clamp" | "add"
    value: float = 0.0  # clamp's value or add's coefficient; 0 for off

    def __post_init__(self) -> None:
        if isinstance(self.latent, bool) or not isinstance(self.latent, int) or self.latent < 0:
            raise ValueError(f"a latent index must be a non-negative integer, got {self.latent!r}")
        if self.mode not in MODES:
            raise ValueError(f"latent {self.latent}: switch {self.mode!r} is not one of {', '.join(MODES)}")
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)) or not math.isfinite(self.value):
            raise ValueError(f"latent {self.latent}: {self.mode} needs a finite number, got {self.value!r}")
        if self.mode == "off" and self.value != 0:
            raise ValueError(f"latent {self.latent}: off takes no value (got {self.value!r}); use clamp=v")
        object.__setattr__(self, "value", float(self.value))

    def format(self) -> str:
        return f"{self.latent}:off" if self.mode == "off" else f"{self.latent}:{self.mode}={_number(self.value)}"


def _number(value: float) -> str:
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


@dataclass(frozen=True)
class LatentSwitches:
    """A set of switches, at most one per latent, sorted by latent."""

    items: tuple[LatentSwitch, ...] = ()

    def __post_init__(self) -> None:
        items = tuple(sorted(self.items, key=lambda s: s.latent))
        if len(items) > MAX_SWITCHES:
            raise ValueError(f"at most {MAX_SWITCHES} latents can be switched at once, got {len(items)}")
        for a, b in zip(items, items[1:]):
            if a.latent == b.latent:
                raise ValueError(f"latent {a.latent} is switched twice ({a.format()} and {b.format()})")
        object.__setattr__(self, "items", items)

    @classmethod
    def of(cls, switches: "LatentSwitches | Iterable[LatentSwitch] | str | None") -> "LatentSwitches":
        """Switches from a LatentSwitches, an iterable of LatentSwitch, a link string or None (no switch)."""
        if switches is None:
            return cls()
        if isinstance(switches, LatentSwitches):
            return switches
        if isinstance(switches, str):
            return cls.parse(switches)
        return cls(tuple(switches))

    @classmethod
    def parse(cls, text: str) -> "LatentSwitches":
        """"12:off,40:clamp=3.5,7:add=-2" -> LatentSwitches; ValueError naming the bad item."""
        if not isinstance(text, str):
            raise ValueError(f"latent switches must be a string like '12:off,40:clamp=3.5', got {type(text).__name__}")
        if len(text) > 40 * MAX_SWITCHES:
            raise ValueError(f"latent switches text too long ({len(text)} characters)")
        items = []
        for part in text.split(","):
            if not part.strip():
                continue
            found = ITEM.match(part)
            if found is None:
                raise ValueError(f"latent switch {part.strip()!r} is not LATENT:off, LATENT:clamp=VALUE or "
                                 "LATENT:add=VALUE")
            latent, mode, value = int(found.group(1)), found.group(2), found.group(3)
            if (mode == "off") != (value is None):
                raise ValueError(f"latent switch {part.strip()!r}: " +
                                 ("off takes no value" if mode == "off" else f"{mode} needs =VALUE"))
            try:
                number = 0.0 if value is None else float(value)
            except ValueError:
                raise ValueError(f"latent switch {part.strip()!r}: {value!r} is not a number") from None
            items.append(LatentSwitch(latent, mode, number))
        return cls(tuple(items))

    def format(self) -> str:
        return ",".join(s.format() for s in self.items)

    def check(self, d_sae: int) -> "LatentSwitches":
        """ValueError if a latent is not one of the SAE's 0..d_sae-1; returns self."""
        for s in self.items:
            if s.latent >= d_sae:
                raise ValueError(f"latent {s.latent} is not a latent of this SAE: its latents are 0..{d_sae - 1}")
        return self

    def by_mode(self, *modes: str) -> tuple[list[int], list[float]]:
        """(latents, values) of the switches in `modes`, in latent order."""
        chosen = [s for s in self.items if s.mode in modes]
        return [s.latent for s in chosen], [s.value for s in chosen]

    def __iter__(self) -> Iterator[LatentSwitch]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __str__(self) -> str:
        return self.format()
