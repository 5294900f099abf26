"""Key/value cache for decoding one token at a time: what each attention block of a decoder has
already computed for the tokens before, so a new token costs one row of attention, not a rerun of the
whole prefix.

Shapes: B batch, Hkv key/value heads, K tokens cached, S source length, Dh head width.

    KVSlot.keys / .values   (B, Hkv, K, Dh) self-attention: keys after rotary, grown by each call
                            (B, Hkv, S, Dh) cross-attention: the memory's keys, projected once
    slot.append(k, v)       the K new tokens' keys and values after the cached ones; -> keys, values
    DecoderCache(n_layers)  one self slot and one cross slot per layer, and `length` = K
    cache.select(b, n)      row b's first n tokens, as a cache of its own (views, no copy)

Appending writes into a buffer with room to spare (it doubles when full), so a decoding step copies its one
new row, not the whole prefix (1,024 tokens on GPT-2 small: 24 copies of 3 MB per generated token before).

A cache belongs to one call (generate() makes one and drops it): it is never stored on a module, so one
model still serves many users at once. It is exact only where earlier tokens never attend to later ones
(a causal decoder): their keys and values then do not change when tokens are appended.
"""

from __future__ import annotations

from torch import Tensor


class KVSlot:
    """Keys and values one attention block has seen so far in one decoding call."""

    __slots__ = ("keys", "values", "_room")

    def __init__(self) -> None:
        self.keys: Tensor | None = None  # (B, Hkv, K, Dh): a view of the first K rows of the buffer, if any
        self.values: Tensor | None = None
        self._room: tuple[Tensor, Tensor] | None = None  # this slot's own buffers (B, Hkv, capacity, Dh)

    @property
    def filled(self) -> bool:
        return self.keys is not None

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """k, v (B, Hkv, T, Dh) of the new tokens after the cached ones -> keys, values (B, Hkv, K + T, Dh). A view
        handed out before stays as it was: rows are only ever written past the length it covers."""
        if self.keys is None:
            self.keys, self.values = k, v
            return k, v
        n, t = self.keys.shape[2], k.shape[2]
        if self._room is None or self._room[0].shape[2] < n + t:  # a buffer of its own (a selected cache's rows are
            # views of another cache's), with room for as many tokens again
            shape = (*self.keys.shape[:2], 2 * (n + t), self.keys.shape[3])
            room = (self.keys.new_empty(shape), self.values.new_empty(shape))
            room[0][:, :, :n], room[1][:, :, :n] = self.keys, self.values
            self._room = room
        keys, values = self._room
        keys[:, :, n:n + t], values[:, :, n:n + t] = k, v
        self.keys, self.values = keys[:, :, :n + t], values[:, :, :n + t]
        return self.keys, self.values


class DecoderCache:
    """Per-layer slots of a decoder stack, and how many tokens they hold."""

    def __init__(self, n_layers: int) -> None:
        self.self_attn = [KVSlot() for _ in range(n_layers)]
        self.cross = [KVSlot() for _ in range(n_layers)]
        self.length = 0  # tokens whose keys and values the self slots hold

    def select(self, row: int, length: int) -> "DecoderCache":
        """Row `row`'s first `length` tokens (e.g. one prompt of a right-padded batch run once with weights, to be
        continued alone: in a causal decoder its real tokens never saw the padding after them)."""
        if not 0 < length <= self.length:
            raise ValueError(f"cannot select {length} tokens of a cache holding {self.length}")
        out = DecoderCache(len(self.self_attn))
        for mine, theirs in zip(out.self_attn, self.self_attn):
            mine.keys, mine.values = theirs.keys[row:row + 1, :, :length], theirs.values[row:row + 1, :, :length]
        for mine, theirs in zip(out.cross, self.cross):
            if theirs.filled:
                mine.keys, mine.values = theirs.keys[row:row + 1], theirs.values[row:row + 1]
        out.length = length
        return out
