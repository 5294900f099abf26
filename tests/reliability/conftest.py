"""Shared fixtures of the reliability tests (issue 8): tiny checkpoints on disk, a free port, the app
launched on 127.0.0.1, one torch thread (tiny models on a shared 2-core machine run fastest single-threaded).

Fixtures rather than helper modules: tests run with --import-mode=importlib and have no packages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

HOSTILE = ("<img src=x onerror=alert(1)>", "<script>alert(1)</script>")
CORPUS = [
    "samedi 21 novembre 2026", "3 May 2024", "the quick brown fox jumps over the lazy dog",
    "日本語の文章です", "Ünïcödé façade naïve", "emoji 👍🏽 🎉", "<b>html</b> & **markdown**", "مرحبا بالعالم",
]


def _tiny_encoder(vocab_size: int, seed: int = 0, **over: Any):
    from explorer.model import Transformer, TransformerConfig

    config = TransformerConfig(**{**dict(arch="encoder", vocab_size=vocab_size, d_model=16, n_heads=2, n_layers=2,
                                         d_ff=32, max_len=160, dropout=0.0, pad_id=0), **over})
    torch.manual_seed(seed)
    return Transformer(config).eval()


@pytest.fixture(scope="session")
def model_root(tmp_path_factory) -> Path:
    """A folder with two tiny encoder checkpoints (random weights):

    bpe-encoder   byte-level BPE tokenizer (every character becomes tokens, no [UNK]): for fuzzing
    html-encoder  word-level tokenizer whose vocabulary holds the hostile strings as whole tokens, so
                  they reach the token table, axis labels and hover text verbatim: for the browser test
    """
    from tokenizers import AddedToken

    from explorer.checkpoints import save_checkpoint
    from explorer.tokenizer import train_tokenizer

    root = tmp_path_factory.mktemp("models")
    specials = ("[PAD]", "[UNK]", "[BOS]", "[EOS]")
    bpe = train_tokenizer(CORPUS * 4, kind="bpe", vocab_size=400, special_tokens=specials)
    save_checkpoint(root / "bpe-encoder", _tiny_encoder(bpe.vocab_size), bpe,
                    task={"name": "sentence-embedding", "pooling": "mean", "examples": CORPUS[:3],
                          "description": "tiny random encoder, byte-level BPE"})

    words = train_tokenizer(CORPUS + ["hello world alert x"], kind="wordlevel", vocab_size=200,
                            special_tokens=specials)
    words.backend.add_tokens([AddedToken(h, normalized=False) for h in HOSTILE])
    examples = [f"hello {HOSTILE[0]} world", f"{HOSTILE[1]} hello"]
    save_checkpoint(root / "html-encoder", _tiny_encoder(words.vocab_size, seed=1), words,
                    task={"name": "sentence-embedding", "pooling": "mean", "examples": examples,
                          "description": "tiny random encoder; " + HOSTILE[0] + " " + HOSTILE[1]})
    return root


@pytest.fixture(scope="session")
def tiny_encoder_factory():
    return _tiny_encoder


@pytest.fixture
def launch(free_port):
    """launch(**build_demo_kwargs) -> (demo, url): the app on 127.0.0.1, closed after the test. A private app per test,
    not the session's (tests/app/conftest.serve): these tests set what the app is built with (one torch thread for
    byte-equal answers, the queue's concurrency, their own folders), count the app's sessions (test_memory: exactly
    one), or load it with many clients, which a shared app would carry into the next test."""
    from explorer.app.demo import build_demo, launch_kwargs, queue

    demos = []

    def start(concurrency: int = 4, **kwargs: Any):
        demo = queue(build_demo(**{"device": "cpu", **kwargs}), concurrency)
        demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                    **launch_kwargs())
        demos.append(demo)
        return demo, demo.local_url

    yield start
    for demo in demos:
        demo.close()
