"""Update latency and bytes to the browser: text in -> every figure of the attention view serialised.

Ours: explorer tokenizer -> explorer encoder (all-MiniLM-L6-v2, weights returned) ->
`attention_overview` (all L x H heads, one tiled heatmap) + `head_heatmap` (one head) -> `figure_json`
(the JSON text gr.Plot sends, as the app makes it). Also the app: `explorer.app.run.result.analyze`
(baseline + toggled run and all of its figures, serialised) at the sizes the app accepts.
BertViz: transformers tokenizer -> `BertModel(attn_implementation="eager")(output_attentions=True)` ->
`bertviz.model_view(attention, tokens, html_action="return")` (data inlined in the HTML).

Shapes: attention (L, H, T, T) per sentence; L=6 layers, H=12 heads for MiniLM.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import torch

from benchmarks.common import interleaved, load_minilm, minilm_folder, ratio, text_of_tokens

VIEW_LAYER, VIEW_HEAD = 0, 0  # the single head drawn large (any head costs the same)
# The plots the Run button returns, in its order (the chosen head appears twice: two tabs).
APP_PLOTS = ("mask", "head", "baseline", "difference", "overview", "head (All heads tab)", "generation self",
             "generation cross", "rollout")


def our_views(text: str) -> tuple[str, str]:
    """(overview JSON, single-head JSON) for one text: the whole update, end to end."""
    from explorer.viz import attention_overview, figure_json, head_heatmap

    loaded = load_minilm()
    enc = loaded.tokenizer.encode(text)
    ids = torch.tensor([enc.ids])  # (1, T)
    with torch.inference_mode():
        out = loaded.model(ids)
    attn = torch.stack([a[0] for a in out.attentions.encoder]).float().numpy()  # (L, H, T, T)
    labels = list(enc.tokens)
    overview = attention_overview(attn, labels, labels)
    head = head_heatmap(attn[VIEW_LAYER, VIEW_HEAD], labels, labels,
                        title=f"Layer {VIEW_LAYER}, head {VIEW_HEAD}")
    return figure_json(overview), figure_json(head)


@cache
def _hf() -> tuple[Any, Any]:
    from transformers import AutoTokenizer, BertModel

    folder = minilm_folder()
    tok = AutoTokenizer.from_pretrained(folder)
    model = BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    return tok, model


def bertviz_available() -> str | None:
    """None when transformers + bertviz import, else the reason."""
    try:
        import bertviz  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as err:
        return f"{err} (pip install -r requirements-bench.txt; bertviz with --no-deps)"
    return None


def bertviz_view(text: str) -> str:
    """BertViz model view HTML for one text (transformers forward with attentions + model_view)."""
    from bertviz import model_view

    tok, model = _hf()
    inputs = tok(text, return_tensors="pt")
    with torch.inference_mode():
        out = model(**inputs, output_attentions=True)
    tokens = tok.convert_ids_to_tokens(inputs["input_ids"][0])
    return model_view(out.attentions, tokens, html_action="return").data


def app_available() -> str | None:
    try:
        from explorer.app.tabs import analyze  # noqa: F401
    except Exception as err:  # noqa: BLE001 - module being written or broken: report, do not fail
        return f"explorer.app.run.result not importable: {type(err).__name__}: {err}"
    return None


def app_settings(head_off: bool) -> Any:
    """The app's default toggles, or the same with one head (layer 0, head 0) switched off."""
    from explorer.app.run.toggles import Toggles

    if not head_off:
        return Toggles()
    n_layers, n_heads = _app_model().config.attention_kinds()["encoder"]
    on = frozenset((layer, head) for layer in range(n_layers) for head in range(n_heads)) - {(0, 0)}
    return Toggles(heads_on={"encoder": on})


def app_update(text: str, head_off: bool = False) -> list[str]:
    """What the app's Run button does on the server: `explorer.app.run.result.analyze` (one run without
    toggles; two, baseline and toggled, with `head_off`) and each of the 9 figures /analyze sends made ready for
    gr.Plot as explorer.app.events does it (`events.plot`)."""
    from explorer.app.tabs import analyze

    a = analyze(_app_model(), text, None, app_settings(head_off), max_tokens=app_max_tokens())
    figs = [a.figure("mask"), a.figure("head"), a.figure("baseline"), a.figure("difference"), a.figure("overview"),
            a.figure("head"), a.figure("generation_self"), a.figure("generation_cross"),
            a.figure("rollout")]  # APP_PLOTS
    to_plot = _ui_plot()
    return [to_plot(f) for f in figs]


@cache
def _ui_plot() -> Callable[[Any], str]:
    from explorer.app.page.assets import plot

    return lambda fig: plot(fig).plot


@cache
def _app_model() -> Any:
    return load_minilm()


def app_max_tokens() -> int:
    from explorer.app.serving.limits import MAX_TOKENS

    return MAX_TOKENS


def nbytes(s: str | list[str]) -> int:
    return sum(len(x.encode()) for x in s) if isinstance(s, list) else len(s.encode())


def measure_size(n: int, repeats: int, bertviz_max: int, app: bool = True) -> dict[str, Any]:
    """One token count: medians for ours, the app handler and BertViz, interleaved; bytes; ratios."""
    loaded = load_minilm()
    text = text_of_tokens(loaded.tokenizer, n)
    row: dict[str, Any] = {"tokens": n}
    fns: dict[str, Callable[[], Any]] = {"ours": lambda: our_views(text)}
    skip_bv = bertviz_available()
    if skip_bv is None and n <= bertviz_max:
        fns["bertviz"] = lambda: bertviz_view(text)
    elif skip_bv is not None:
        row["bertviz_skipped"] = skip_bv
    else:
        row["bertviz_skipped"] = f"size (> {bertviz_max} tokens; --full to include)"
    skip_app = app_available() if app else "not requested"
    if skip_app is None and n <= app_max_tokens():
        fns["app_handler"] = lambda: app_update(text)
        fns["app_head_off"] = lambda: app_update(text, head_off=True)
    else:
        row["app_handler_skipped"] = skip_app or f"the app accepts at most {app_max_tokens()} tokens"
    # BertViz above 128 tokens is ~1 GB and many seconds per call: one run, no warm-up, after ours.
    big = n > 128 and "bertviz" in fns
    slow = {"bertviz": fns.pop("bertviz")} if big else {}
    times, outs = interleaved(fns, repeats)
    if slow:
        t, o = interleaved(slow, 1, warmup=0)
        times.update(t)
        outs.update(o)
        fns.update(slow)
        row["bertviz_repeats"] = 1
    ov, hd = outs["ours"]
    row["ours_s"] = round(times["ours"], 4)
    row["ours_bytes"] = {"overview": nbytes(ov), "head": nbytes(hd), "total": nbytes(ov) + nbytes(hd)}
    if "app_handler" in fns:
        for key in ("app_handler", "app_head_off"):
            row[f"{key}_s"] = round(times[key], 4)
            row[f"{key}_bytes"] = nbytes(outs[key])
            row[f"{key}_plot_bytes"] = [nbytes(o) for o in outs[key]]
        row["app_handler_figures"] = len(outs["app_handler"])
    if "bertviz" in fns:
        html = outs.pop("bertviz")
        row["bertviz_s"] = round(times["bertviz"], 4)
        row["bertviz_bytes"] = nbytes(html)
        row["ratio_time_ours_over_bertviz"] = ratio(times["ours"], times["bertviz"])
        row["ratio_bytes_ours_over_bertviz"] = ratio(row["ours_bytes"]["total"], row["bertviz_bytes"])
        if "app_handler" in fns:
            row["ratio_time_app_over_bertviz"] = ratio(times["app_handler"], times["bertviz"])
            row["ratio_bytes_app_over_bertviz"] = ratio(row["app_handler_bytes"], row["bertviz_bytes"])
            row["ratio_time_app_head_off_over_bertviz"] = ratio(times["app_head_off"], times["bertviz"])
            row["ratio_bytes_app_head_off_over_bertviz"] = ratio(row["app_head_off_bytes"], row["bertviz_bytes"])
    row["repeats"] = repeats
    return row


def run(sizes: tuple[int, ...] = (32, 128, 512), repeats: int = 5, bertviz_max: int = 512) -> dict[str, Any]:
    load_minilm()  # load time is cold start, not update latency
    if bertviz_available() is None:
        _hf()
    return {"model": "all-MiniLM-L6-v2 (6 layers x 12 heads)",
            "ours_does": "tokenize, forward with weights, attention_overview + head_heatmap, figure_json",
            "bertviz_does": "tokenize, BertModel eager forward with output_attentions, model_view(html_action='return')",
            "by_tokens": [measure_size(n, repeats, bertviz_max) for n in sizes]}


def artifacts(n: int, offset: int = 0, bertviz: bool = True) -> dict[str, Any]:
    """The payloads the browser benchmark draws: our two figures and BertViz's HTML for one text."""
    text = text_of_tokens(load_minilm().tokenizer, n, offset)
    ov, hd = our_views(text)
    out: dict[str, Any] = {"overview": ov, "head": hd}
    if bertviz and bertviz_available() is None:
        out["bertviz"] = bertviz_view(text)
    return out


def _check_same_attention(n: int = 32) -> float:
    """Max |ours - transformers| attention weight for one text (a sanity check of the comparison)."""
    loaded = load_minilm()
    text = text_of_tokens(loaded.tokenizer, n)
    tok, model = _hf()
    inputs = tok(text, return_tensors="pt")
    with torch.inference_mode():
        theirs = torch.stack([a[0] for a in model(**inputs, output_attentions=True).attentions])
        ours = torch.stack([a[0] for a in loaded.model(inputs["input_ids"]).attentions.encoder])
    return float(np.abs((ours - theirs).numpy()).max())
