"""The shared model registry: one load per key under concurrency, eviction by bytes, refusal over budget."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from explorer.app.serving.errors import AppError
from explorer.app.serving.registry import ModelRegistry, model_bytes
from tests.hang import HANG_S


def sized(n: int):
    return SimpleNamespace(size=n)


class CountingLock:
    """A lock that counts the threads that have come to it (holding it or waiting for it)."""

    def __init__(self, arrived: threading.Semaphore):
        self.lock, self.arrived = threading.Lock(), arrived

    def __enter__(self):
        self.arrived.release()
        self.lock.acquire()

    def __exit__(self, *exc):
        self.lock.release()


class CountingLocks(dict):
    """The registry's per-key locks (`_key_locks`), each a CountingLock."""

    def __init__(self, arrived: threading.Semaphore):
        super().__init__()
        self.arrived = arrived

    def setdefault(self, key, default=None):
        return super().setdefault(key, CountingLock(self.arrived))


def test_loads_once_under_concurrency_and_evicts_least_recently_used():
    reg = ModelRegistry(budget_bytes=2, size_of=lambda v: 1)
    calls = []
    arrived = threading.Semaphore(0)
    reg._key_locks = CountingLocks(arrived)  # white box: see the five requests reach the key's lock

    def factory(key):
        def make():
            calls.append(key)
            # The first load goes on until the four other requests wait for it at the key's lock (the event itself,
            # not a time), so all five ask for "a" while it loads.
            if key == "a" and len(calls) == 1:
                for _ in range(5):
                    assert arrived.acquire(timeout=HANG_S)
            return object()
        return make

    results = []
    threads = [threading.Thread(target=lambda: results.append(reg.get("a", factory("a")))) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG_S)
    assert calls == ["a"] and len(results) == 5 and len({id(r) for r in results}) == 1
    reg.get("b", factory("b"))
    reg.get("a", factory("a"))  # a is now most recent
    reg.get("c", factory("c"))  # evicts b
    assert reg.keys() == ["a", "c"] and calls == ["a", "b", "c"]


def test_eviction_by_bytes():
    reg = ModelRegistry(budget_bytes=100, size_of=lambda v: v.size)
    reg.get("small-1", lambda: sized(30))
    reg.get("small-2", lambda: sized(30))
    reg.get("small-3", lambda: sized(30))
    assert reg.keys() == ["small-1", "small-2", "small-3"] and reg.used_bytes == 90
    reg.get("small-1", lambda: sized(30))  # used: now the most recent
    reg.get("big", lambda: sized(70))  # needs 70: small-2 and small-3 (least recent) go
    assert reg.keys() == ["small-1", "big"] and reg.used_bytes == 100


def test_a_model_over_the_whole_budget_is_refused_and_nothing_is_evicted():
    reg = ModelRegistry(budget_bytes=100, size_of=lambda v: v.size)
    reg.get("kept", lambda: sized(60))
    budget = r"more than the app's whole model memory budget of 100 bytes \(--model-memory\)"
    with pytest.raises(AppError, match=budget):
        reg.get("huge", lambda: sized(101))
    assert reg.keys() == ["kept"] and "huge" not in reg


def test_model_bytes_counts_tied_weights_once():
    from explorer.model import Transformer, TransformerConfig

    config = TransformerConfig(arch="decoder", vocab_size=50, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                               positional="learned", tie_embeddings=True)
    model = Transformer(config)
    tensors = {p.data_ptr(): p.numel() * p.element_size() for p in [*model.parameters(), *model.buffers()]}
    assert model_bytes(SimpleNamespace(model=model)) == sum(tensors.values())
    assert model.generator.proj.weight.data_ptr() == model.tgt_embed.token.weight.data_ptr()
    untied = Transformer(config.replace(tie_embeddings=False))
    assert model_bytes(SimpleNamespace(model=untied)) == model_bytes(SimpleNamespace(model=model)) + 50 * 16 * 4


def test_budget_refuses_before_loading_a_too_large_checkpoint(tmp_path):
    """The loader gets the budget as a parameter limit, so a too-large config is refused from config.json alone."""
    from explorer.app.serving.session import AppContext, load_session
    from explorer.checkpoints import save_checkpoint
    from explorer.model import Transformer, TransformerConfig
    from explorer.training.tasks import build_tokenizer

    tok = build_tokenizer()
    model = Transformer(TransformerConfig(arch="encoder", vocab_size=tok.vocab_size, d_model=64, n_heads=2,
                                          n_layers=2, d_ff=128, max_len=64))
    save_checkpoint(tmp_path / "m", model, tok, task={"name": "sentence-embedding"})
    ctx = AppContext(ModelRegistry(budget_bytes=model.num_parameters() * 4 - 1), allowed_dirs=(str(tmp_path),))
    with pytest.raises(AppError, match=r"above the limit.*model memory budget"):
        load_session("m", "cpu", ctx)
    assert ctx.registry.keys() == []
