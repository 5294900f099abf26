"""Two models side by side (explorer.app.tabs.compare.side_by_side): each side equals that model analysed alone, head
switches and views apply per model, both models are held against the model memory budget, bad input is refused."""

from __future__ import annotations

import pytest

from explorer.app.run.toggles import Toggles
from explorer.app.run.view import View
from explorer.app.serving.errors import AppError
from explorer.app.serving.lru import ByteLRU
from explorer.app.serving.registry import ModelRegistry, model_bytes
from explorer.app.serving.session import AppContext, Session, load_session, models_held, second_session
from explorer.app.tabs import RUN_FIGURES, analyze
from explorer.app.tabs.compare import side_by_side
from explorer.app.tabs.compare.side_by_side import SideSettings
from explorer.viz.serialize import figure_json
from tests.app.tiny_models import tiny_gpt2, tiny_llama

TEXT1, TEXT2 = "The cat sat on the mat", "A dog ran"
NEW = 4  # tokens each language model continues with


def compare_models(*args, **kwargs):
    """side_by_side.compare_models drawing the page's Run figures."""
    return side_by_side.compare_models(*args, figures=RUN_FIGURES, **kwargs)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    tiny_gpt2(root / "tiny-gpt2")
    tiny_llama(root / "tiny-llama")
    return root


@pytest.fixture(scope="module")
def lms(folder):
    """The two tiny language models (byte-level BPE vs sentencepiece tokenizers) from one registry."""
    ctx = AppContext(ModelRegistry(), (str(folder),))
    return load_session("tiny-gpt2", "cpu", ctx)[1], load_session("tiny-llama", "cpu", ctx)[1]


def same_side(side, loaded, toggles, view, text1=TEXT1, text2=TEXT2, new_tokens=NEW):
    """The side's figures, output and tokens equal the model's own Run with the same settings."""
    alone = analyze(loaded, text1, text2, toggles, view, new_tokens=new_tokens)
    figures = side.figures()
    assert figure_json(figures["head"]) == figure_json(alone.figures("attention")["head"])
    assert figure_json(figures["overview"]) == figure_json(alone.figures("overview")["overview"])
    assert side.output.headers == alone.output.headers and side.output.rows == alone.output.rows
    assert side.analysis.tokens == alone.tokens
    assert side.view == alone.view


def test_each_side_is_its_model_alone_with_its_own_tokens_and_switches(lms):
    gpt2, llama = lms
    off = Toggles(heads_on={"decoder": frozenset({(0, 0), (0, 2), (1, 0), (1, 1), (1, 3), (1, 4), (1, 5)})})
    settings = [SideSettings("tiny-gpt2", gpt2, off, View("decoder", 1, 2, sentence=1)),
                SideSettings("tiny-llama", llama, Toggles(), View("decoder", 1, 1, sentence=1))]
    cmp = compare_models(settings, TEXT1, TEXT2, new_tokens=NEW)
    first, second = cmp.sides
    same_side(first, gpt2, off, settings[0].view)
    same_side(second, llama, Toggles(), settings[1].view)
    # Each model labels its own tokens: the byte-level BPE's "␣the" vs the sentencepiece tokenizer's "<s>" start.
    assert "␣the" in first.tokens() and "<s>" not in first.tokens()
    assert second.tokens()[0] == "<s>" and len(second.tokens()) != len(first.tokens())
    assert "&lt;s&gt;" in second.heading()  # token text escaped in the Markdown, never HTML
    assert "layer 1, head 2" in first.heading() and "layer 1, head 1" in second.heading()
    assert "different numbers of tokens" in cmp.summary()
    # The head switches are per model: the first model's output moved, the second's is its plain Run.
    assert first.output.changed and not second.output.changed
    assert first.output.headers[2] == "next token (baseline)"  # language models: the next-token top 10


def test_head_switches_of_one_model_leave_the_other_alone(lms):
    gpt2, llama = lms
    view = View("decoder", 0, 0)
    plain = compare_models([SideSettings("a", gpt2, Toggles(), view), SideSettings("b", llama, Toggles(), view)],
                           TEXT1, "", new_tokens=NEW)
    second_off = Toggles(heads_on={"decoder": frozenset({(0, 1)})})  # only L0 H1 of the second model on
    switched = compare_models([SideSettings("a", gpt2, Toggles(), view),
                               SideSettings("b", llama, second_off, view)], TEXT1, "", new_tokens=NEW)
    for name in ("head", "overview"):
        assert figure_json(plain.sides[0].figures()[name]) == figure_json(switched.sides[0].figures()[name])
        assert figure_json(plain.sides[1].figures()[name]) != figure_json(switched.sides[1].figures()[name])
    assert plain.sides[0].output.rows == switched.sides[0].output.rows
    same_side(switched.sides[1], llama, second_off, view, text2="")


def test_the_same_model_twice(lms):
    gpt2, _ = lms
    cmp = compare_models([SideSettings("tiny-gpt2", gpt2, Toggles(), View()),
                          SideSettings("tiny-gpt2", gpt2, Toggles(), View(layer=1, head=3))], TEXT1, "", new_tokens=NEW)
    assert cmp.sides[0].output.rows == cmp.sides[1].output.rows
    assert figure_json(cmp.sides[0].figures()["head"]) != figure_json(cmp.sides[1].figures()["head"])  # L0 H0 / L1 H3
    assert "the same number of tokens" in cmp.summary()
    with pytest.raises(ValueError):
        compare_models([SideSettings("tiny-gpt2", gpt2, Toggles(), View())], TEXT1, "")


def test_date_translator_vs_date_gpt(ctx, app):
    _, translator = load_session("date-translator", "cpu", ctx)
    _, gpt = load_session("date-gpt", "cpu", ctx)
    settings = [SideSettings("date-translator", translator, Toggles(), View("cross", 1, 2)),
                SideSettings("date-gpt", gpt, Toggles(heads_on={"decoder": frozenset({(0, 0)})}), View("decoder", 3, 1))]
    cmp = compare_models(settings, app.DATE1, app.DATE2)
    for side, s in zip(cmp.sides, settings):
        same_side(side, s.loaded, s.toggles, s.view, app.DATE1, app.DATE2, None)
        assert side.output.headers[2] == "output"  # sequence models: the generated text
    assert cmp.sides[0].view.kind == "cross" and cmp.sides[1].view.kind == "decoder"
    assert cmp.sides[0].output.rows[0][2].count("-") == 2  # an ISO date: YYYY-MM-DD


def test_second_model_names_are_checked(folder):
    first = Session("tiny-gpt2", "cpu")
    assert second_session("  tiny-llama ", first) == Session("tiny-llama", "cpu")  # on the first model's device
    for bad in ("", "   ", None, "x" * 500):
        with pytest.raises(AppError):
            second_session(bad, first)
    ctx = AppContext(ModelRegistry(), (str(folder),))
    with pytest.raises(AppError, match="Could not load 'no-such-model'"):
        with models_held([first, second_session("no-such-model", first)], ctx):
            pass
    assert ctx.registry.held_bytes == 0  # the first model, got before the failure, is let go


def test_both_models_count_against_the_budget(folder, lms):
    gpt2_bytes, llama_bytes = (model_bytes(m) for m in lms)
    a, b, same = Session("tiny-gpt2", "cpu"), Session("tiny-llama", "cpu"), Session("tiny-gpt2", "cpu")
    # Room for both: both held while the block runs, and nothing else may push either out.
    ctx = AppContext(ModelRegistry(gpt2_bytes + llama_bytes), (str(folder),))
    with models_held([a, b], ctx) as (ma, mb):
        assert ctx.registry.held_bytes == ctx.registry.used_bytes == gpt2_bytes + llama_bytes
        assert ma.source.endswith("tiny-gpt2") and mb.source.endswith("tiny-llama")
        with pytest.raises(AppError, match="in use now"):  # a third model does not evict a held one
            load_session("date-gpt", "cpu", ctx)
        assert set(ctx.registry.keys()) == {a.key, b.key}
    assert ctx.registry.held_bytes == 0
    load_session("date-gpt", "cpu", ctx)  # once let go, the least recently used one makes room
    assert a.key not in ctx.registry
    # Room for one only: the second is refused with a message naming the budget, and nothing stays held.
    ctx = AppContext(ModelRegistry(max(gpt2_bytes, llama_bytes) + 1), (str(folder),))
    with pytest.raises(AppError, match="--model-memory"):
        with models_held([a, b], ctx):
            pass
    assert ctx.registry.held_bytes == 0
    # The same model twice is one model, counted once.
    ctx = AppContext(ModelRegistry(gpt2_bytes), (str(folder),))
    with models_held([a, same], ctx) as (m1, m2):
        assert m1 is m2 and ctx.registry.held_bytes == gpt2_bytes
    assert ctx.registry.held_bytes == 0


def test_pinned_entries_are_never_evicted():
    lru = ByteLRU(10)
    assert lru.put("a", 1, 4, pin=True) and lru.put("b", 2, 4)
    assert lru.put("c", 3, 4)  # evicts b, the oldest unpinned, not a
    assert "a" in lru and "b" not in lru and lru.pinned_bytes == 4
    assert lru.get("c", pin=True) == 3
    assert not lru.put("d", 4, 4)  # 4 + 4 pinned + 4 > 10: refused, nothing evicted
    assert lru.keys() == ["a", "c"]
    lru.unpin("a")
    assert lru.put("d", 4, 4) and lru.keys() == ["c", "d"]  # a unpinned: evicted now
    lru.get("c", pin=True)
    lru.unpin("c")
    assert lru.pinned_bytes == 4  # pinned twice, let go once
    lru.unpin("c")
    assert lru.pinned_bytes == 0


def test_the_python_examples_of_the_docs_run():
    """docs/compare.md's Python blocks run as written (the one that needs a running app: tests/app/test_compare_api)."""
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "compare.md"
    blocks = [b for b in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)
              if not b.startswith("# needs a running app")]
    assert blocks
    for block in blocks:
        exec(compile(block, str(doc), "exec"), {})


def test_the_grid_fitted_to_a_side_keeps_its_traces(lms):
    gpt2, llama = lms
    cmp = compare_models([SideSettings("a", gpt2, Toggles(), View()), SideSettings("b", llama, Toggles(), View())],
                         TEXT1, "", new_tokens=NEW)
    for side in cmp.sides:
        full, fitted = side.figures()["overview"], side.figures(560)["overview"]
        assert fitted.layout.height < full.layout.height  # planned for 1,100 px, drawn in 560
        assert figure_json(fitted.update_layout(height=full.layout.height)) == figure_json(full)  # only the height
