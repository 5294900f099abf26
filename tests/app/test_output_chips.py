"""Sentence 1's output as clickable tokens (explorer.app.run.output_chips): each token a person can click knows
where the model predicts it, so Contributions reads exactly that prediction."""

from __future__ import annotations

import torch

from explorer.app.run.output_chips import ClickTarget
from explorer.app.run.readings import read_texts


def clickable(chips):
    return [(text, t) for (text, _), t in zip(chips.items, chips.targets) if isinstance(t, ClickTarget)]


def top_at(loaded, reading, position):
    src, tgt = reading.tensors(loaded.model.device)
    with torch.inference_mode():
        return int(loaded.model(src, tgt, padding=False, need_weights=False).logits[0, position].argmax())


def test_a_translation_answer_token_is_predicted_where_its_target_says(app):
    _, loaded = app.load("date-translator")
    a = app.analyze(loaded, "lundi 3 mars 2025", None)
    tokens = clickable(a.chips)
    assert "".join(text for text, _ in tokens) == "2025-03-03[EOS]"
    reading = read_texts(loaded, "lundi 3 mars 2025", None, 1024)[0]
    for k, (text, target) in enumerate(tokens):
        assert target.position == k and target.label == text
        assert top_at(loaded, reading, target.position) == target.token  # the greedy answer: the top token there
    assert tokens[6][1].what == "token 6 of the answer"


def test_the_toggled_answer_follows_where_it_differs(app):
    _, loaded = app.load("date-translator")
    heads = {**app.all_heads(loaded), "cross": ["L0 H0", "L0 H2", "L0 H3", "L1 H0", "L1 H1", "L1 H2"]}
    a = app.analyze(loaded, "lundi 3 mars 2025", None, app.toggles(heads))
    texts = [text for text, _ in a.chips.items]
    assert "→ with the toggles:" in texts
    after = a.chips.items[texts.index("→ with the toggles:") + 1:]
    assert "".join(t for t, _ in after) == "2025-05-03[EOS]"  # the month pair: cross L0 H1 + L1 H3 off
    assert [cat for t, cat in after][5:7] == ["same", "changed"]


def test_a_decoder_only_answer_follows_its_prompt(app):
    """induction-gpt generates its continuation: answer token k is predicted at the prompt's last position + k."""
    _, loaded = app.load("induction-gpt")
    text = "t1 t2 t3 t4 t1 t2 t3"
    tokens = clickable(app.analyze(loaded, text, None).chips)
    prompt = len(text.split()) + 1  # [BOS] first
    reading = read_texts(loaded, text, None, 1024)[0]
    assert [t.position for _, t in tokens] == list(range(prompt - 1, prompt - 1 + len(tokens)))
    assert [text for text, _ in tokens][:4] == ["t4", "t1", "t2", "t3"]  # the induction pattern, continued
    assert all(top_at(loaded, reading, t.position) == t.token for _, t in tokens)


def test_a_model_without_output_tokens_has_no_chips(app):
    _, loaded = app.build("encoder")
    assert app.analyze(loaded, "hello there", None).chips.items == []


def test_a_clicked_token_is_named_by_its_text_and_reads_back_as_itself(app):
    """The Contributions target box gets the token's text ("3"), never an id where the text reads back; every name it
    gets reads back as the same token."""
    from explorer.app.run.readings import token_id, token_text

    _, loaded = app.load("date-translator")
    tokens = clickable(app.analyze(loaded, "lundi 3 mars 2025", None).chips)
    assert token_text(loaded, tokens[6][1].token, tokens[6][1].label) == "3"
    for text, target in tokens:
        named = token_text(loaded, target.token, target.label)
        assert token_id(loaded, named, "target token") == target.token, (text, named)
    assert token_text(loaded, tokens[6][1].token, "mars") == f"#{tokens[6][1].token}"  # several tokens: its id
