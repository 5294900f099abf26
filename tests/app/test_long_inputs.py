"""1,024-token inputs (issue 16): the app reads all 1,024 tokens of a long text, and what one Run sends stays small
on the GPT-2-small shape (12 layers x 12 heads; a narrow random model, since the bytes depend on heads and tokens,
not on the width)."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from tests.app.long_model import long_text, save_long_gpt2  # noqa: E402

RUN_BYTES_GOAL = 4 * 1024**2  # issue 16: at most 4 MB of figures per Run at 1,024 tokens on GPT-2 small


@pytest.fixture(scope="module")
def gpt2_shaped(tmp_path_factory):
    import explorer

    folder = save_long_gpt2(tmp_path_factory.mktemp("long") / "gpt2-12x12", n_layer=12, n_head=12, n_embd=24)
    return explorer.load(folder, "cpu")


@pytest.mark.parametrize("head_off", [False, True])
def test_run_payload_at_1024_tokens_is_within_4_mb(gpt2_shaped, head_off):
    from explorer.app.run.toggles import Toggles
    from explorer.app.run.view import View
    from explorer.app.tabs import RUN_FIGURES, analyze
    from explorer.viz import figure_json

    heads = {"decoder": frozenset((la, h) for la in range(12) for h in range(12) if (la, h) != (0, 0))}
    a = analyze(gpt2_shaped, long_text(), None, Toggles(heads_on=heads if head_off else None), View(), 1024, 0)
    assert len(a.tokens[1]) == 1024 and "1,024" in a.status  # cut to 1,024 tokens, and the notice says so
    sizes = {tab: sum(len(figure_json(f).encode()) for f in a.figures(tab).values()) for tab in RUN_FIGURES.by_tab}
    assert max(sizes.values()) <= RUN_BYTES_GOAL, sizes  # a Run sends the visible tab
    assert sizes["attention"] > 100_000  # the heatmaps really are in it (not message figures)
