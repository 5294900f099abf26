"""What one /analyze request needs in memory, and the gate that keeps the requests running at once within a budget.

Shapes: B sentences, T tokens (the input, plus the tokens a decoder generates), H heads, V vocabulary.
A request's memory is dominated by attention, which grows with T^2: each run returns every head's (B, H, T, T)
weights (float16 past returned.FLOAT32_WEIGHTS_LIMIT), a toggled request makes two runs, and one block of query rows'
float32 scores exists while a layer is computed (explorer.model.attention.BLOCK_CELLS), then one layer in float32
while the figures reduce it. Generation keeps a key/value cache (explorer.model.cache) of every decoder layer; only
with the causal mask off does each generated token rerun the decoder over its prefix with every layer's weights.
A language model's logits (B, T, V) come on top, and the view's block that each run records (x, q, k, z of every
sentence) and keeps of the chosen one (x, q, k, v, z: run.captures, for the Inside a head tab). `request_bytes` adds
these up; it is an upper bound of what benchmarks/app_memory.py measures (BENCHMARKS.md, "memory").

`MemoryGate` is a semaphore weighted by those bytes: a request waits until its estimate fits in what the requests
already running left of `--request-memory`; one that needs more than the whole budget runs alone. Gradio's
`--concurrency` still caps how many run at once, so short inputs keep running side by side.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ...checkpoints import LoadedModel
from ...model import TransformerConfig
from ...model.attention import BLOCK_CELLS
from ..serving.limits import DEFAULT_REQUEST_MEMORY, MAX_NEW_TOKENS
from .inputs import codec_for, encode_inputs
from .returned import FLOAT32_WEIGHTS_LIMIT

if TYPE_CHECKING:
    from .request import RunRequest
from .toggles import head_mask

SCORE_COPIES = 3  # float32 score blocks alive while a layer's attention is computed: scores, softmax, cast
ACTIVATION_COPIES = 16  # (B, T, D) float32 activations alive at once in a forward pass (residual, norms, MLP ...)
# Memory the allocator holds besides the returned weights: a layer's weights are made block by block between other
# allocations, and freed blocks stay in the heap among them (benchmarks/app_memory.py measures how much).
HEAP_SLACK = 0.15


def request_bytes(config: TransformerConfig, batch: int, tokens: int, *, toggled: bool, causal: bool = True) -> int:
    """Estimated peak bytes of one /analyze request on `tokens` input tokens per sentence (B = `batch`), above the
    loaded model; `toggled`: a baseline and a toggled run; `causal`: the toggled run keeps the causal mask."""
    generates = config.arch != "encoder"
    t = tokens + (MAX_NEW_TOKENS if config.arch == "decoder" else 0)  # a decoder-only model continues the input
    heads = sum(n_layers * n_heads for n_layers, n_heads in config.attention_kinds().values())  # every kind's
    cells = batch * heads * t * t
    kept = cells * (2 if 4 * cells > FLOAT32_WEIGHTS_LIMIT else 4)  # one run's weights (returned.weights_dtype)
    cache = 2 * 4 * batch * t * config.resolved_kv_heads * config.resolved_head_dim * config.decoder_layers
    # generation: the key/value cache, or without the causal mask a step's weights of every layer over the prefix
    step = 0 if not generates else cache if causal else kept
    block = max(batch * config.n_heads * t, min(batch * config.n_heads * t * t, BLOCK_CELLS))  # cells of a block
    # while a layer is computed, a block of scores; later, one layer of one sentence in float32 while the figures
    # reduce it (an upper bound: explorer.interpret.roles.row_sums converts a block of rows at a time)
    layer = max(SCORE_COPIES * 4 * block, 4 * config.n_heads * t * t)
    logits = 4 * batch * t * (config.tgt_vocab_size or config.vocab_size) if config.arch == "decoder" else 0
    activations = ACTIVATION_COPIES * 4 * batch * t * max(config.d_model, config.d_ff)
    n_runs = 2 if toggled else 1
    width = max(config.d_model, config.n_heads * config.resolved_head_dim)  # x, and q and z of every head
    block = n_runs * 4 * t * width * (4 * batch + 5)  # each run's record of the view's block, and its capture
    runs = n_runs * kept
    return runs + int(HEAP_SLACK * runs) + step + layer + logits + activations + block


class MemoryGate:
    """A semaphore counted in bytes: `with gate.hold(n):` waits until n more bytes fit in `budget_bytes`."""

    def __init__(self, budget_bytes: int = DEFAULT_REQUEST_MEMORY):
        if budget_bytes < 1:
            raise ValueError("the request memory budget must be positive")
        self.budget_bytes = int(budget_bytes)
        self._free = self.budget_bytes
        self._waiting = 0  # requests waiting for their bytes to fit
        self._cond = threading.Condition()

    @property
    def in_use(self) -> int:
        with self._cond:
            return self.budget_bytes - self._free

    @property
    def waiting(self) -> int:
        """Requests waiting in `hold` until their bytes fit (tests wait for this instead of for a time)."""
        with self._cond:
            return self._waiting

    @contextmanager
    def hold(self, n_bytes: int) -> Iterator[int]:
        """Reserve min(n_bytes, budget) for the duration of the block (a larger request runs alone)."""
        n = min(max(int(n_bytes), 0), self.budget_bytes)
        with self._cond:
            self._waiting += 1
            try:
                self._cond.wait_for(lambda: self._free >= n)
            finally:
                self._waiting -= 1
            self._free -= n
        try:
            yield n
        finally:
            with self._cond:
                self._free += n
                self._cond.notify_all()


def analysis_bytes(loaded: LoadedModel, request: RunRequest, max_tokens: int) -> int:
    """`request_bytes` of a Run on the request's sentences (encoded as the Run will encode them: tokenizing is
    milliseconds, the run it gates takes seconds)."""
    toggles = request.toggles
    inputs = encode_inputs(loaded, codec_for(loaded), request.text1, request.text2, max_tokens)
    toggled = not (toggles.default_masks and head_mask(loaded.config, toggles) is None)
    return request_bytes(loaded.config, len(inputs.rows), max(map(len, inputs.rows)), toggled=toggled,
                         causal=toggles.causal)
