"""The app's handler functions, called directly (no Gradio): figures, toggles, masks, messages."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from explorer.app import handlers as H
from explorer.app.registry import ModelRegistry

SMALL = dict(preset="custom", n_layers=2, n_heads=4, d_model=32, d_ff=64, norm="pre-norm", positional="sinusoidal",
             seed=0)
DATE1, DATE2 = "samedi 21 novembre 2026", "3 May 2024"


@pytest.fixture(scope="module")
def registry():
    return ModelRegistry(capacity=6)


def built(registry, arch="encoder-decoder", **over):
    info = H.build_model({**SMALL, "arch": arch, **over}, "cpu", registry)
    return info, H.get_bundle(info.session, registry)


def z(fig):
    """The (first) heatmap's values as a float array (None cells -> NaN)."""
    return np.array(fig.data[0].z, dtype=float)


def allowed(fig):
    """A mask figure's cells as booleans (allowed = 1, blocked = NaN gap)."""
    return np.nan_to_num(z(fig)) > 0.5


def test_model_info_and_examples(registry):
    info, bundle = built(registry)
    assert info.kinds == ["encoder", "decoder", "cross"]
    assert info.heads["encoder"][:2] == ["L0 H0", "L0 H1"] and len(info.heads["cross"]) == 8
    assert "193," not in info.markdown and "parameters" in info.markdown and "cpu" in info.markdown
    assert info.examples, "date examples come with the date tokenizer"
    assert f"{bundle.model.num_parameters():,}" in info.markdown


def test_default_analysis_figure_shapes(registry):
    _, bundle = built(registry)
    inputs = H.encode_inputs(bundle, DATE1, DATE2)
    S = max(len(r) for r in inputs.rows)
    a = H.analyze(bundle, DATE1, DATE2, H.Settings(), H.View("encoder", 1, 3, 1))
    assert z(a.head_fig).shape == (S, S) == z(a.mask_fig).shape
    ov = z(a.overview_fig)
    assert ov.shape == (2 * S, 4 * S)  # 2 layers x 4 heads tiled (the gaps between tiles are on the axes only)
    headers, rows = a.tokens
    assert headers == ["sentence", "position", "token", "id"]
    assert len(rows) == sum(len(r) for r in inputs.rows)
    assert a.output[0][:3] == ["#", "run", "output"] and len(a.output[1]) == 4  # 2 sentences x 2 runs
    assert not a.changed and "No toggle is active" in a.status
    # Nothing to compare yet: baseline and difference panels say so instead of repeating the view.
    assert not a.baseline_fig.data and "No toggle is active" in a.baseline_fig.layout.annotations[0].text
    assert not a.diff_fig.data and "once a toggle is active" in a.diff_fig.layout.annotations[0].text
    # cross-attention: generated (decoder) rows x source columns
    c = H.analyze(bundle, DATE1, None, H.Settings(), H.View("cross", 0, 0, 1))
    T = len(c.output[1][0][3].split(") ")) + 1  # [BOS] + generated tokens
    assert z(c.head_fig).shape == (T, S - (S - len(inputs.rows[0])))


def test_head_off_changes_output(registry):
    info, bundle = built(registry)
    base = H.analyze(bundle, DATE1, DATE2, H.Settings())
    heads = dict(info.heads)
    heads["cross"] = []  # every cross-attention head off: the decoder no longer reads the source
    off = H.analyze(bundle, DATE1, DATE2, H.Settings(heads=heads))
    base_probs = [r[4] for r in base.output[1] if r[1] == "toggled"]
    off_probs = [r[4] for r in off.output[1] if r[1] == "toggled"]
    assert base_probs != off_probs
    assert "No toggle is active" not in off.status
    assert off.baseline_fig.data and off.diff_fig.data  # now there is something to compare


def test_head_off_changes_minilm_similarity(registry):
    info = H.load_model(H.MINILM, "cpu", registry)
    bundle = H.get_bundle(info.session, registry)
    heads = {"encoder": [h for h in info.heads["encoder"] if not h.startswith(("L0", "L1"))]}
    a = H.analyze(bundle, "A man is playing a guitar.", "Someone plays an instrument.", H.Settings(heads=heads),
                  H.View("encoder", 3, 0, 1))
    assert a.changed
    sim = a.output[1][0]
    assert sim[0].startswith("cosine similarity") and sim[1] != sim[2]
    # the overview marks 24 heads as off
    assert "24 heads switched off" in a.overview_fig.layout.title.text


def test_masks_change_heatmaps(registry):
    _, bundle = built(registry)
    view = H.View("encoder", 0, 0, 2)  # sentence 2 is shorter: padded
    a = H.analyze(bundle, DATE1, DATE2, H.Settings(), view)
    b = H.analyze(bundle, DATE1, DATE2, H.Settings(padding=False), view)
    n2 = len(H.encode_inputs(bundle, DATE2).rows[0])
    ma, mb = allowed(a.mask_fig), allowed(b.mask_fig)
    assert ma.shape == mb.shape and not np.array_equal(ma, mb)
    pa, pb = z(a.head_fig), z(b.head_fig)
    assert np.nan_to_num(pa)[:, n2:].sum() == 0  # padded keys get no weight with the padding mask
    assert np.nan_to_num(pb)[:, n2:].sum() > 0  # ... and some without it
    # causal mask of decoder self-attention
    dv = H.View("decoder", 0, 0, 1)
    c1 = H.analyze(bundle, DATE1, None, H.Settings(), dv)
    c2 = H.analyze(bundle, DATE1, None, H.Settings(causal=False), dv)
    assert np.triu(np.nan_to_num(z(c1.head_fig)), 1).sum() == 0
    assert np.triu(np.nan_to_num(z(c2.head_fig)), 1).sum() > 0
    assert not np.array_equal(allowed(c1.mask_fig), allowed(c2.mask_fig))
    # custom masks: no attention to self, local window, one blocked token
    ns = H.analyze(bundle, DATE1, None, H.Settings(custom="no self"), H.View("encoder", 0, 0, 1))
    assert np.nan_to_num(np.diag(z(ns.head_fig))).sum() == 0
    assert not np.diag(allowed(ns.mask_fig)).any() and allowed(ns.mask_fig)[0, 1]
    lw = H.analyze(bundle, DATE1, None, H.Settings(custom="local window", window=1), H.View("encoder", 0, 0, 1))
    m = allowed(lw.mask_fig)
    assert m[5, 4] and m[5, 6] and not m[5, 7]
    bt = H.analyze(bundle, DATE1, None, H.Settings(custom="block token", block_token=3), H.View("encoder", 0, 0, 1))
    assert not allowed(bt.mask_fig)[:, 3].any() and allowed(bt.mask_fig)[:, 2].all()
    assert np.nan_to_num(z(bt.head_fig))[:, 3].sum() == 0
    assert np.abs(np.nan_to_num(z(bt.diff_fig))).max() > 0  # the difference map shows the change


def test_decoder_only_and_encoder_models(registry):
    _, gpt = built(registry, "decoder", positional="learned")
    a = H.analyze(gpt, DATE1, DATE2, H.Settings(causal=False), H.View("", 1, 1, 2))
    assert a.view.kind == "decoder" and a.gen_self_fig.data
    assert "no cross-attention" in a.gen_cross_fig.layout.annotations[0].text
    figs = H.positional(gpt, 32, 40, 10000)
    assert np.array(figs[3].data[0].z).shape == (40, 32)  # the learned table, first 40 positions
    _, enc = built(registry, "encoder")
    e = H.analyze(enc, DATE1, DATE2, H.Settings(heads={"encoder": ["L0 H0"]}))
    assert e.output[0] == ["comparison", "baseline", "toggled"] and e.changed
    assert "does not generate" in e.gen_self_fig.layout.annotations[0].text


def test_generation_view_per_token(registry):
    _, bundle = built(registry)
    a = H.analyze(bundle, DATE1, None, H.Settings(), H.View("cross", 1, 2, 1))
    n_generated = len(a.output[1][1][3].split(") "))
    assert z(a.gen_cross_fig).shape[0] == n_generated
    assert z(a.gen_self_fig).shape == (n_generated, n_generated)  # [BOS] + N-1 earlier tokens as keys


def test_empty_and_overlong_input(registry):
    _, bundle = built(registry)
    for text in ("", "   \n\t "):
        with pytest.raises(H.AppError, match="empty"):
            H.analyze(bundle, text, DATE2, H.Settings())
    long = "21 novembre 2026 " * 100
    a = H.analyze(bundle, long, None, H.Settings())
    assert "cut off" in a.status
    assert len(a.tokens[1]) == bundle.task.max_source_len
    huge = "x" * (H.MAX_CHARS + 50)
    _, enc = built(registry, "encoder")
    b = H.analyze(enc, huge, None, H.Settings())
    assert f"only the first {H.MAX_CHARS:,}" in b.status


def test_html_in_input_shown_literally(registry):
    info = H.load_model(H.MINILM, "cpu", registry)
    bundle = H.get_bundle(info.session, registry)
    a = H.analyze(bundle, "<b>bold</b> & <script>x</script>", None, H.Settings())
    tokens = [r[2] for r in a.tokens[1]]
    assert "<" in tokens and "script" in tokens  # plain text cells, not markup
    assert "<b>" not in H.escape_md("<b>x</b>") and "&lt;b&gt;" in H.escape_md("<b>x</b>")
    assert "<script" not in a.head_fig.to_json()


def test_invalid_config_message(registry):
    with pytest.raises(H.AppError, match="d_model=30.*not divisible by n_heads=4"):
        H.build_model({**SMALL, "arch": "encoder", "d_model": 30}, "cpu", registry)
    with pytest.raises(H.AppError, match="parameters"):
        H.build_model({**SMALL, "arch": "encoder-decoder", "n_layers": 24, "d_model": 1024, "d_ff": 4096,
                       "n_heads": 8}, "cpu", registry)
    with pytest.raises(H.AppError, match="not available"):
        H.build_model({**SMALL, "arch": "encoder"}, "cuda:7", registry)


def test_unknown_hub_id_offline(registry, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(H.AppError, match="(?i)cannot load.*no-such-owner/no-such-model"):
        H.load_model("no-such-owner/no-such-model", "cpu", registry)


def test_path_escape_refused(registry, tmp_path):
    (tmp_path / "models").mkdir()
    for text in ("../../etc", "/etc", "models/../../"):
        with pytest.raises(H.AppError, match="(?i)not a folder inside the allowed folders|neither"):
            H.load_model(text, "cpu", registry, allowed_dirs=[str(tmp_path / "models")])
    with pytest.raises(H.AppError, match="(?i)choose"):
        H.load_model("  ", "cpu", registry)


def test_positional_limits():
    heat, curves, sim, model_fig = H.positional(None, 16, 20, 100)
    assert np.array(heat.data[0].z).shape == (20, 16) and np.array(sim.data[0].z).shape == (20, 20)
    with pytest.raises(H.AppError, match="d_model"):
        H.positional(None, 5000, 20, 10000)
    with pytest.raises(H.AppError, match="base"):
        H.positional(None, 16, 20, 1)


def test_importance(registry):
    _, bundle = built(registry)
    fig, md = H.importance(bundle, DATE1, DATE2, H.Settings(), "cross")
    assert "log-probability" in md and "cross-attention" in fig.layout.title.text
    assert np.array(fig.data[0].z).shape == (2, 4)


def test_clicked_tile_messages():
    assert H.clicked_tile("1,2,1763800000000") == (1, 2) == H.clicked_tile(" 1,2 ")
    for bad in (None, "", "layer 1", "1;2", "-1,2", "1,2,3,4", "<script>", "99999,1"):
        assert H.clicked_tile(bad) is None, bad


def test_head_labels_validation(registry):
    _, bundle = built(registry)
    with pytest.raises(H.AppError, match="does not exist"):
        H.analyze(bundle, DATE1, None, H.Settings(heads={"encoder": ["L9 H0"]}))


def test_registry_loads_once_and_evicts():
    reg = ModelRegistry(capacity=2)
    calls = []

    def factory(key):
        def make():
            calls.append(key)
            time.sleep(0.05)
            return object()
        return make

    results = []
    threads = [threading.Thread(target=lambda: results.append(reg.get("a", factory("a")))) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["a"] and len({id(r) for r in results}) == 1
    reg.get("b", factory("b"))
    reg.get("a", factory("a"))  # a is now most recent
    reg.get("c", factory("c"))  # evicts b
    assert reg.keys() == ["a", "c"] and calls == ["a", "b", "c"]


@pytest.fixture(scope="module")
def translator(registry):
    from explorer.loading import shipped_names

    if "date-translator" not in shipped_names():
        pytest.skip("checkpoints/date-translator is not there")
    info = H.load_model("date-translator", "cpu", registry)
    return info, H.get_bundle(info.session, registry)


def test_trained_translator_head_toggles(translator):
    info, bundle = translator
    base = H.analyze(bundle, "samedi 21 novembre 2026", None, H.Settings(), H.View("cross", 1, 0, 1))
    assert base.output[1][0][2] == "2026-11-21"  # the trained model gets this right
    heads = dict(info.heads)
    heads["cross"] = []
    off = H.analyze(bundle, "samedi 21 novembre 2026", None, H.Settings(heads=heads), H.View("cross", 1, 0, 1))
    assert off.changed and off.output[1][1][2] != "2026-11-21"
    # Some single head matters for some input: stop at the first one-head-off run that changes an answer.
    found = None
    for kind, labels in info.heads.items():
        for label in labels:
            heads = dict(info.heads)
            heads[kind] = [h for h in labels if h != label]
            for text in info.examples:
                inputs = H.encode_inputs(bundle, text)
                base, _ = H.run_model(bundle, inputs, H.Settings())
                off, _ = H.run_model(bundle, inputs, H.Settings(heads=heads))
                if base.outputs[0]["ids"] != off.outputs[0]["ids"]:
                    found = (kind, label, text)
                    break
            if found:
                break
        if found:
            break
    assert found is not None


def test_positional_shows_the_models_own_table(registry):
    _, bundle = built(registry)  # sinusoidal, d_model 32
    own = H.positional(bundle, 32, 30, 10000)[3]
    ref = H.positional(None, 32, 30, 10000)[0]
    assert "Loaded model (sinusoidal" in own.layout.title.text
    np.testing.assert_allclose(z(own), z(ref), atol=1e-5)  # the model's buffer is the same formula
    _, none = built(registry, "encoder", positional="none")
    assert "no positional encoding" in H.positional(none, 32, 30, 10000)[3].layout.annotations[0].text


def test_unexpected_errors_become_short_messages(caplog):
    from explorer.app.ui import user_message

    assert user_message(H.AppError("Type a sentence first")) == "Type a sentence first"
    with caplog.at_level("ERROR"):
        try:
            raise KeyError("internal detail")
        except KeyError as err:
            msg = user_message(err)
    assert msg.startswith("Something went wrong (KeyError)") and "internal detail" not in msg
    assert "Traceback" in caplog.text or "internal detail" in caplog.text  # logged server-side


def test_app_cli_defaults(monkeypatch):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("app_main", Path(__file__).resolve().parents[2] / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    monkeypatch.delenv("SPACE_ID", raising=False)
    local = app.parse_args([])
    assert (local.host, local.port, local.device) == ("127.0.0.1", None, "auto")
    monkeypatch.setenv("SPACE_ID", "someone/explorer")
    space = app.parse_args(["--allow-dir", "a", "--allow-dir", "b", "--checkpoint", "date-gpt"])
    assert (space.host, space.port, space.allow_dir, space.checkpoint) == ("0.0.0.0", 7860, ["a", "b"], "date-gpt")


def test_trained_gpt_needs_its_causal_mask(registry):
    from explorer.loading import shipped_names

    if "date-gpt" not in shipped_names():
        pytest.skip("checkpoints/date-gpt is not there")
    info = H.load_model("date-gpt", "cpu", registry)
    bundle = H.get_bundle(info.session, registry)
    text = "samedi 21 novembre 2026"
    base = H.analyze(bundle, text, None, H.Settings(), H.View("decoder", 1, 0, 1))
    assert base.output[1][0][2] == "2026-11-21" and not base.changed
    peek = H.analyze(bundle, text, None, H.Settings(causal=False), H.View("decoder", 1, 0, 1))
    assert peek.changed  # trained with the look-ahead mask, it fails without it
    assert np.triu(np.nan_to_num(z(peek.head_fig)), 1).sum() > 0
