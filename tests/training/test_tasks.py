import pytest
import torch

from explorer.checkpoints import LoadedModel
from explorer.training import dates
from explorer.model import Transformer, TransformerConfig
from explorer.training.tasks import (
    IGNORE_INDEX,
    SPECIAL_TOKENS,
    DateGPT,
    DateTranslation,
    build_tokenizer,
    exact_match,
    make_task,
    task_from_dict,
)
from explorer.training.train import compute_loss


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


def test_tokenizer_specials_and_no_unknown_characters(tokenizer):
    assert [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.sep_id) == (0, 2, 3, 4)
    typed = "".join(sorted(dates.charset())) + "Août März ÉTÉ ñ ç ß º 0123456789-"
    ids = tokenizer.encode(typed, add_special_tokens=False).ids
    assert tokenizer.unk_id not in ids
    assert tokenizer.encode("日", add_special_tokens=False).ids == [tokenizer.unk_id]


def test_date_translation_round_trip_and_normalisation(tokenizer):
    task = DateTranslation(tokenizer)
    ids, notice = task.encode_source("samedi\u00a021  novembre 2026")
    assert notice is None
    assert ids[-1] == task.eos_id and len(ids) == len("samedi 21 novembre 2026") + 1
    assert task.decode(ids) == "samedi 21 novembre 2026"
    # decode stops at the first EOS and drops padding / BOS
    answer = task.target_ids("2026-11-21")
    assert task.decode([task.bos_id] + answer + [7, 8, task.pad_id]) == "2026-11-21"
    assert task.labels(task.encode_source("1 mai")[0]) == ["1", "␣", "m", "a", "i", "[EOS]"]


def test_truncation_gives_a_notice(tokenizer):
    for task in (DateTranslation(tokenizer), DateGPT(tokenizer)):
        ids, notice = task.encode_source("x" * 100, max_len=20)
        assert len(ids) == 20
        assert notice is not None and "100 characters" in notice
        assert ids[-1] == (task.eos_id if task.arch == "encoder-decoder" else task.sep_id)
        assert task.encode_source("x" * 10, max_len=20)[1] is None


def test_gpt_prompt_layout(tokenizer):
    task = DateGPT(tokenizer)
    ids, _ = task.encode_source("5 mai 2001")
    assert ids[0] == task.bos_id and ids[-1] == task.sep_id
    assert task.decode(ids) == "5 mai 2001"


def test_translation_batch_is_teacher_forcing(tokenizer):
    task = DateTranslation(tokenizer)
    examples = dates.generate_examples(3, seed=11)
    batch = task.training_batch(examples)
    assert batch.tgt.shape == batch.labels.shape == (3, 11)
    assert (batch.tgt[:, 0] == task.bos_id).all()
    assert torch.equal(batch.tgt[:, 1:], batch.labels[:, :-1])
    assert (batch.labels[:, -1] == task.eos_id).all()
    longest = max(len(e.text) for e in examples) + 1
    assert batch.src.shape == (3, longest)
    for row, e in zip(batch.src.tolist(), examples):
        assert task.decode(row) == e.text


def test_gpt_batch_masks_the_prompt_in_the_labels(tokenizer):
    task = DateGPT(tokenizer)
    examples = dates.generate_examples(4, seed=12)
    batch = task.training_batch(examples)
    assert batch.tgt is None and batch.src.shape == batch.labels.shape
    for row, labels, e in zip(batch.src.tolist(), batch.labels.tolist(), examples):
        prompt = len(e.text) + 2  # [BOS] chars [SEP]
        assert row[prompt - 1] == task.sep_id
        assert labels[: prompt - 1] == [IGNORE_INDEX] * (prompt - 1)  # no loss on the prompt
        answer = labels[prompt - 1 : prompt - 1 + 11]
        assert answer == task.target_ids(e.target)  # first answer char predicted at [SEP]
        assert all(x == IGNORE_INDEX for x in labels[prompt - 1 + 11 :])  # padding


def test_gpt_loss_ignores_the_prompt(tokenizer):
    """Changing the logits at prompt positions leaves the loss unchanged; answer positions change it."""
    task = DateGPT(tokenizer)
    cfg = TransformerConfig(arch="decoder", vocab_size=tokenizer.vocab_size, d_model=16, n_heads=2, n_layers=1,
                            d_ff=32, dropout=0.0, max_len=64)
    model = Transformer(cfg).eval()
    examples = dates.generate_examples(2, seed=13)
    batch = task.training_batch(examples)
    base = compute_loss(model, batch)
    prompt = len(examples[0].text) + 2
    logits = model(batch.src).logits
    # the same loss by hand over labelled positions only
    mask = batch.labels != IGNORE_INDEX
    manual = torch.nn.functional.cross_entropy(logits[mask], batch.labels[mask])
    assert torch.allclose(base, manual, atol=1e-6)
    assert mask[0].sum() == 11 and not mask[0, : prompt - 1].any()


def test_to_dict_round_trip(tokenizer):
    for name in ("date-translation", "date-gpt"):
        task = make_task(name, tokenizer)
        d = task.to_dict()
        assert d["name"] == name and d["bos_id"] == 2 and d["eos_id"] == 3 and d["sep_id"] == 4
        assert d["max_new_tokens"] >= 11 and "ISO" in d["data"] and len(d["examples"]) >= 4
        back = task_from_dict(d, tokenizer)
        assert type(back) is type(task) and back.examples == task.examples
    with pytest.raises(ValueError, match="bos_id"):
        task_from_dict({**make_task("date-gpt", tokenizer).to_dict(), "bos_id": 7}, tokenizer)
    with pytest.raises(ValueError, match="not a date task"):
        task_from_dict({"name": "classification"}, tokenizer)


def test_exact_match_counts_correct_answers(tokenizer, monkeypatch):
    """An untrained model scores 0; a model forced to emit a given answer scores exactly its share."""
    task = DateGPT(tokenizer)
    cfg = TransformerConfig(arch="decoder", vocab_size=tokenizer.vocab_size, d_model=16, n_heads=2, n_layers=1,
                            d_ff=32, dropout=0.0, max_len=64)
    model = Transformer(cfg).eval()
    examples = dates.generate_examples(6, seed=14)
    assert exact_match(LoadedModel(model, tokenizer, None, task.to_dict(), "test"), examples, batch_size=4) == 0.0
    target = examples[0].target
    monkeypatch.setattr(DateGPT, "predict", lambda self, m, texts, bs=256: [target] * len(texts))
    expected = sum(e.target == target for e in examples) / len(examples)
    assert task.exact_match(model, examples) == expected


def test_predict_keeps_order_across_length_groups(tokenizer):
    task = DateGPT(tokenizer)
    cfg = TransformerConfig(arch="decoder", vocab_size=tokenizer.vocab_size, d_model=16, n_heads=2, n_layers=1,
                            d_ff=32, dropout=0.0, max_len=64)
    model = Transformer(cfg).eval()
    texts = ["1 mai 2000", "12/12/2012", "2 mai 2000", "lundi 1 mai 2000"]
    together = task.predict(model, texts, batch_size=2)
    alone = [task.predict(model, [t])[0] for t in texts]
    assert together == alone
    with pytest.raises(ValueError, match="equal length"):
        task.generate(model, texts)
