"""Fixtures of the app tests: one shared app context (registry), helpers to build or load a model into it
and to analyse text with page-style settings (head labels as on the page)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

SMALL = dict(preset="custom", n_layers=2, n_heads=4, d_model=32, d_ff=64, norm="pre-norm", positional="sinusoidal",
             seed=0)
DATE1, DATE2 = "samedi 21 novembre 2026", "3 May 2024"


@pytest.fixture(scope="module")
def ctx():
    from explorer.app.serving.registry import ModelRegistry
    from explorer.app.serving.session import AppContext

    return AppContext(ModelRegistry())


@pytest.fixture(scope="module")
def page_events(ctx):
    """The page on the shipped date-translator, every event wired (as build_demo does)."""
    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.page.layout import layout
    from explorer.app.serving.session import Session
    from explorer.app.tabs import TABS

    page = layout(starting_point(ctx, "date-translator", "cpu"), Session("date-translator", "cpu"), TABS)
    with page.demo:
        ev = PageEvents(page, ctx)
        ev.wire()
    return ev


@pytest.fixture(scope="module")
def app(ctx):
    """Page-level helpers: build(arch, **fields), load(name), heads(labels per kind), analyze(...)."""
    from explorer.app.serving.build import BuildSpec
    from explorer.app.page.head_labels import head_labels, parse_heads
    from explorer.app.serving.session import build_session, load_session
    from explorer.app.run.toggles import Toggles
    from explorer.app.run.view import View
    from explorer.app.tabs import analyze

    def build(arch="encoder-decoder", **over):
        return build_session(BuildSpec(**{**SMALL, "arch": arch, **over}), "cpu", ctx)

    def load(name, **kw):
        return load_session(name, "cpu", ctx, **kw)

    def all_heads(loaded):
        """kind -> every head label, as the page's checkboxes start."""
        return {k: head_labels(*lh) for k, lh in loaded.config.attention_kinds().items()}

    def toggles(heads=None, **masks):
        """Toggles from page-style head labels: kind -> labels that are on."""
        on = None if heads is None else {k: parse_heads(v) for k, v in heads.items()}
        return Toggles(heads_on=on, **masks)

    def run(loaded, text1, text2=None, toggles=None, view=None):
        return analyze(loaded, text1, text2, toggles or Toggles(), view or View())

    return SimpleNamespace(build=build, load=load, all_heads=all_heads, toggles=toggles, analyze=run, View=View,
                           DATE1=DATE1, DATE2=DATE2, SMALL=SMALL)


# ------------------------------------------------------------------ served apps, one per model folder for the session
@pytest.fixture(scope="session")
def serve(free_port):
    """serve(checkpoint=None, folder=None) -> the URL of the app `build_demo(device="cpu", checkpoint=...,
    allowed_dirs=[folder])` served on 127.0.0.1: one app per (checkpoint, folder) for the whole session, closed at its
    end. The app tests and the browser tests of one model share it: a page's state is its own (Gradio's per-session
    state), and a test watching the server (tests/app/browser.record_runs) patches the module the server calls, for
    that test only. A test that needs the app built another way (special budgets, a context of its own, a count of the
    app's sessions) serves a private one (`tests.app.browser.served`, tests/reliability/conftest.launch)."""
    from contextlib import ExitStack

    from explorer.app.demo import build_demo
    from tests.app.browser import served

    urls: dict[tuple, str] = {}
    with ExitStack() as stack:

        def url(checkpoint: str | None = None, folder=None) -> str:
            key = (checkpoint, None if folder is None else str(folder))
            if key not in urls:
                kwargs = {} if checkpoint is None else {"checkpoint": checkpoint}
                if folder is not None:
                    kwargs["allowed_dirs"] = [str(folder)]
                urls[key] = stack.enter_context(served(build_demo(device="cpu", **kwargs), free_port()))
            return urls[key]

        yield url


@pytest.fixture(scope="session")
def default_app(serve) -> str:
    """The app as `python app.py` starts it (the shipped date-translator): its URL."""
    return serve()


@pytest.fixture
def open_view(default_app, browser):
    """open_view(query="", viewport=(1280, 800), phone=False) -> a context manager giving (page, errors): the default
    app opened at `?query` in a fresh Chromium context of that size (a phone's: touch, mobile), once its first heatmap
    is drawn and its first Run has ended (tests.app.browser.opened). The layout tests of the phone, the projector and
    a class's view share it."""
    from tests.app.browser import opened

    def open_it(query: str = "", viewport: tuple[int, int] = (1280, 800), phone: bool = False):
        extra = dict(is_mobile=True, has_touch=True) if phone else {}
        return opened(f"{default_app}?{query}" if query else default_app, browser, viewport=viewport, **extra)

    return open_it


@pytest.fixture(scope="session")
def lm_folder(tmp_path_factory):
    """tiny-gpt2 (2 layers x 6 heads, byte-level BPE) and tiny-llama (2 x 2, sentencepiece): tests/app/tiny_models."""
    from tests.app.tiny_models import tiny_gpt2, tiny_llama

    root = tmp_path_factory.mktemp("lm-models")
    tiny_gpt2(root / "tiny-gpt2")
    tiny_llama(root / "tiny-llama")
    return root


@pytest.fixture(scope="session")
def lm_app(serve, lm_folder) -> str:
    """The app started on tiny-gpt2, lm_folder allowed: its URL."""
    return serve("tiny-gpt2", lm_folder)


@pytest.fixture(scope="session")
def sae_folder(tmp_path_factory):
    """(folder, latent): two SAEs of the shipped date-gpt (d_sae 128 on blocks.2.hook_resid_pre):

    date-gpt-sae  random weights (seed 3): the HTTP API's tests (tests/app/test_features_api.py)
    sae           random weights (seed 5) with the decoder row of `latent` (a latent of the 24 the Features view shows
                  for "21/11/2026", not the one it shows first) scaled up 40 times, so that switching it off changes
                  date-gpt's answer: the browser test (tests/app/test_browser_features.py)
    """
    import dataclasses

    import torch

    import explorer
    from explorer.interpret.sae import features_view, random_sae, save_sae

    root = tmp_path_factory.mktemp("saes")
    save_sae(random_sae(64, 128, "blocks.2.hook_resid_pre", seed=3), root / "date-gpt-sae", model_name="date-gpt")
    loaded = explorer.load("date-gpt", "cpu")
    sae = random_sae(64, 128, "blocks.2.hook_resid_pre", seed=5)
    ids = torch.tensor(loaded.tokenizer.encode("[BOS]21/11/2026[SEP]2026-11-21").ids)  # as the tab reads the sentence
    view = features_view(loaded.model, ids, sae, columns=24)
    latent = next(int(i) for i in view.columns if int(i) != view.latent)
    W_dec = sae.W_dec.clone()
    W_dec[latent] *= 40
    save_sae(dataclasses.replace(sae, W_dec=W_dec), root / "sae", model_name="date-gpt")
    return root, latent


@pytest.fixture(scope="session")
def features_app(serve, sae_folder) -> str:
    """The app started on date-gpt, sae_folder allowed: its URL."""
    return serve("date-gpt", sae_folder[0])
