"""A task's pairs: from ids (pairs of different lengths dropped and counted), from text one pair a line, CSV and JSONL
(bad rows named by line, all in one message), encoder-decoder answers written as the target so far, and the tasks
generated for the shipped models (their own data's recipes)."""

import json

import pytest
import torch

import explorer
from explorer.interpret.circuits import generated_task, make_task, parse_pairs, task_from_text


def encode(text):  # a character "tokenizer": [BOS]=1, then one id per letter
    return [1] + [ord(c) - 90 for c in text]


def letter(text):
    return [ord(c) - 90 for c in text]


def test_pairs_from_ids_drop_the_ones_whose_lengths_differ_and_say_how_many():
    task = make_task([[1, 2, 3], [1, 2], [4, 5, 6]], [[1, 2, 4], [1, 2, 3], [4, 5, 7]], [7, 8, 9])
    assert len(task) == 2 and task.dropped == (2,)
    assert task.notice == "1 of 3 pairs dropped: their clean and corrupted prompts differ in length in tokens (pair 2)"
    assert task.pairs[1].answer == 9 and task.pairs[1].wrong is None
    tensors = make_task(torch.tensor([[1, 2]]), torch.tensor([[1, 3]]), torch.tensor([5]), torch.tensor([6]))
    assert tensors.pairs[0] == tensors.pairs[0].__class__((1, 2), (1, 3), 5, 6, None, 1)
    with pytest.raises(ValueError, match="the task has no pairs: 1 of 1 pairs dropped"):
        make_task([[1, 2]], [[1]], [3])
    with pytest.raises(ValueError, match="corrupted_ids has 1 rows for 2 pairs"):
        make_task([[1], [2]], [[1]], [3, 4])


def test_lines_csv_and_jsonl_give_the_same_task():
    lines = "# a comment\nabc | abd | e | f\n\nxyz | xyw\n"
    csv = "clean,corrupted,answer,wrong\nabc,abd,e,f\nxyz,xyw\n"
    jsonl = "\n".join(json.dumps(r) for r in [{"clean": "abc", "corrupted": "abd", "answer": "e", "wrong": "f"},
                                               {"clean": "xyz", "corrupted": "xyw"}])
    tasks = [parse_pairs(text, encode, encode_answer=letter) for text in (lines, csv, jsonl)]
    def fields(task):
        return [(p.clean, p.corrupted, p.answer, p.wrong) for p in task.pairs]

    assert fields(tasks[0]) == fields(tasks[1]) == fields(tasks[2])
    spreadsheet = "\ufeff" + csv.replace("\n", "\r\n")  # a byte-order mark and Windows line ends
    assert fields(parse_pairs(spreadsheet, encode, encode_answer=letter)) == fields(tasks[0])
    first = tasks[0].pairs[0]
    assert first.clean == (1, 7, 8, 9) and first.answer == 11 and first.wrong == 12 and first.line == 2
    assert tasks[0].pairs[1].answer is None and tasks[0].pairs[1].line == 4


def test_bad_rows_are_named_by_line_in_one_message():
    text = "abc | abd | e\nonly one field\nabc | abd | ee\n | abd\nabc | abd | e | e f | g\n"
    with pytest.raises(ValueError) as caught:
        parse_pairs(text, encode, encode_answer=letter)
    message = str(caught.value)
    assert message.startswith("4 bad rows (lines):")
    for part in ("line 2: needs 2 to 4 fields", "line 3: the answer must be one token, it is 2",
                 "line 4: the clean prompt is empty", "line 5: needs 2 to 4 fields"):
        assert part in message
    with pytest.raises(ValueError, match=r"line 2: not JSON"):
        parse_pairs('{"clean": "a", "corrupted": "b"}\n{oops', encode, format="jsonl")
    with pytest.raises(ValueError, match="no pairs"):
        parse_pairs("# nothing\n\n", encode)
    with pytest.raises(ValueError, match="more than this request takes"):
        parse_pairs("a | b\nc | d\n", encode, max_pairs=1)


def test_a_request_takes_so_many_characters_pairs_and_tokens_and_says_which_it_passed():
    text = "abc | abd\n" * 3  # 3 pairs of 4 tokens (with [BOS]): 12 tokens, 30 characters
    assert len(parse_pairs(text, encode, max_chars=30, max_pairs=3, max_tokens=12)) == 3
    with pytest.raises(ValueError, match=r"^the pairs' text has 30 characters, more than this request reads \(29\)"):
        parse_pairs(text, encode, max_chars=29)
    with pytest.raises(ValueError, match=r"^3 pairs is more than this request takes \(2\): use fewer pairs"):
        parse_pairs(text, encode, max_pairs=2)
    with pytest.raises(ValueError, match=r"^the 3 pairs hold 12 tokens, more than this request takes \(11\)"):
        parse_pairs(text, encode, max_tokens=11)
    with pytest.raises(ValueError, match="characters"):  # the default bound: a quarter of a million characters
        parse_pairs("a | b\n" * 50_000, encode)


def test_a_decoder_only_answer_may_continue_the_prompt():
    task = parse_pairs("mars | juin | 2025-03 | 2025-06\n", encode, encode_answer=letter, continues=True)
    pair = task.pairs[0]
    assert pair.clean == (*encode("mars"), *letter("2025-0")) and pair.corrupted[-6:] == tuple(letter("2025-0"))
    assert pair.answer == letter("3")[0] and pair.wrong == letter("6")[0] and pair.tgt is None


def test_lengths_that_differ_are_dropped_from_text_with_their_lines():
    task = parse_pairs("abc | abd\nab | abc\nxy | xz\n", encode)
    assert len(task) == 2 and task.dropped == (2,) and "(line 2)" in task.notice


def test_an_encoder_decoder_answer_is_the_target_so_far():
    task = parse_pairs("mars | juin | 2025-03 | 2025-06\n", letter, decoder_start=2)
    pair = task.pairs[0]
    assert pair.tgt == (2, *letter("2025-0")) and pair.answer == letter("3")[0] and pair.wrong == letter("6")[0]
    with pytest.raises(ValueError, match="line 1: the wrong answer must be the same target with another last token"):
        parse_pairs("mars | juin | 2025-03 | 2026-06\n", letter, decoder_start=2)
    with pytest.raises(ValueError, match="line 1: this model's pair needs its answer"):
        parse_pairs("mars | juin\n", letter, decoder_start=2)


@pytest.fixture(scope="module")
def date_translator():
    return explorer.load("date-translator", "cpu")


def test_the_month_task_changes_the_month_alone(date_translator):
    task = generated_task(date_translator, 8, seed=3)
    tok = date_translator.tokenizer
    assert len(task) == 8 and task.dropped == ()
    for pair in task.pairs:
        clean, corrupted = tok.decode(pair.clean), tok.decode(pair.corrupted)
        assert len(pair.clean) == len(pair.corrupted)
        changed = [i for i, (a, b) in enumerate(zip(pair.clean, pair.corrupted)) if a != b]
        assert changed and clean.split()[0] == corrupted.split()[0]  # the weekday stays
        target = tok.decode(pair.tgt)
        assert len(target) in (5, 6) and target[:4].isdigit()  # "2025-" or "2025-0": up to the month's digit
        assert pair.answer != pair.wrong
    assert generated_task(date_translator, 8, seed=3) == task
    assert generated_task(date_translator, 8, seed=4).pairs != task.pairs


def test_the_induction_task_repeats_or_refreshes():
    loaded = explorer.load("induction-gpt", "cpu")
    for half in ("second", "first"):
        task = generated_task(loaded, 5, seed=0, half=half)
        for p in task.pairs:
            span = 10
            k = len(p.clean) - 1 - span
            assert p.clean[1 + span:] == p.clean[1:1 + k] and p.answer == p.clean[1 + k]
            fresh = p.corrupted[1 + span:] if half == "second" else p.corrupted[1:1 + span]
            assert not set(fresh) & set(p.clean)
    with pytest.raises(ValueError, match="half must be one of second, first"):
        generated_task(loaded, 5, half="middle")


def test_a_loaded_models_task_from_text_reads_as_the_model_does(date_translator):
    """date-translator: its characters, the ISO date so far as the decoder input; the generated task's pair typed as
    text gives the same ids. induction-gpt: its tokenizer, "#id" and "␣" answers; date-gpt continues its prompt."""
    generated = generated_task(date_translator, 1, seed=3).pairs[0]
    tok = date_translator.tokenizer
    clean, corrupted = tok.decode(generated.clean), tok.decode(generated.corrupted)
    target = tok.decode(generated.tgt[1:])
    line = f"{clean} | {corrupted} | {target}{tok.decode([generated.answer])} | {target}{tok.decode([generated.wrong])}"
    typed = task_from_text(date_translator, line).pairs[0]
    assert (typed.clean, typed.corrupted, typed.answer, typed.wrong, typed.tgt) == (
        generated.clean, generated.corrupted, generated.answer, generated.wrong, generated.tgt)
    with pytest.raises(ValueError, match=r"line 2: the prompt is 6\d characters .* more than this model reads \(48\)"):
        task_from_text(date_translator, f"{line}\n{'lundi ' * 10} | {'mardi ' * 10} | 2025-03")
    induction = explorer.load("induction-gpt", "cpu")
    task = task_from_text(induction, "t1 t2 t3 t1 | t1 t2 t3 t9 | t2 | #3\nt5 t6 t5 | t5 t6 t7 | ␣t6", max_pairs=2)
    bos, t = induction.tokenizer.bos_id, induction.tokenizer.token_to_id
    assert task.pairs[0].clean == (bos, t("t1"), t("t2"), t("t3"), t("t1")) and task.pairs[0].wrong == 3
    assert task.pairs[0].answer == t("t2") and task.pairs[1].answer == t("t6")
    with pytest.raises(ValueError, match=r"^line 2: the answer 99999 is outside the vocabulary \(0\.\.\d+\)$"):
        task_from_text(induction, "t1 t2 t1 | t1 t2 t3\nt5 t6 t5 | t5 t6 t7 | #99999")
    with pytest.raises(ValueError, match=r"the 2 pairs hold 10 tokens, more than this request takes \(9\)"):
        task_from_text(induction, "t1 t2 t3 t1 | t1 t2 t3 t9\nt5 t6 t5 t6 | t5 t6 t7 t6", max_tokens=9)
    gpt = explorer.load("date-gpt", "cpu")
    pair = task_from_text(gpt, "lundi 3 mars 2025 | lundi 3 juin 2025 | 2025-03 | 2025-06").pairs[0]
    assert gpt.tokenizer.decode(pair.clean[-7:]) .endswith("2025-0") and pair.answer != pair.wrong
