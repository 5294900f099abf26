"""The heads' group-lasso penalty (explorer.training.head_sparsity) and train.py's --head-l1."""

import json
import math

import pytest
import torch

from explorer.model.attention import MultiHeadAttention
from explorer.training import train
from explorer.training.head_sparsity import head_group_lasso, head_norms


def test_a_heads_norm_covers_its_value_rows_and_output_columns_only():
    torch.manual_seed(0)
    attn = MultiHeadAttention(8, 2, 4)
    w_v, w_o = attn.in_proj.weight[16:], attn.out_proj.weight  # (2 heads x 4, 8), (8, 2 heads x 4)
    want = torch.stack([(w_v[h * 4:(h + 1) * 4].square().sum() + w_o[:, h * 4:(h + 1) * 4].square().sum()).sqrt()
                        for h in range(2)])
    assert torch.allclose(head_norms(attn), want)
    with torch.no_grad():
        attn.in_proj.weight[:16] = 100.0  # queries and keys are no part of a head's OV circuit
        attn.out_proj.weight[:, 4:] = 0.0
        attn.in_proj.weight[20:] = 0.0  # head 1's value rows
    assert head_norms(attn)[1] == 0 and torch.allclose(head_norms(attn)[0], want[0])


def test_grouped_query_heads_are_held_by_their_output_columns():
    attn = MultiHeadAttention(8, 4, 2, n_kv_heads=2)  # a value head serves two query heads: it is no one's alone
    w_o = attn.out_proj.weight.view(8, 4, 2)
    assert torch.allclose(head_norms(attn), w_o.square().sum((0, 2)).sqrt())


def test_the_penalty_sums_every_attention_module(tmp_path):
    from explorer.model import Transformer, TransformerConfig

    model = Transformer(TransformerConfig(arch="decoder", vocab_size=20, d_model=8, n_heads=2, n_layers=2, d_ff=16))
    modules = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    assert len(modules) == 2
    assert torch.allclose(head_group_lasso(model), sum(head_norms(m).sum() for m in modules))


def _two_heads(first: float, second: float) -> MultiHeadAttention:
    """Heads of OV norm first and second (each head's weights one entry of W_o)."""
    attn = MultiHeadAttention(8, 2, 4)
    with torch.no_grad():
        attn.in_proj.weight.zero_()
        attn.out_proj.weight.zero_()
        attn.out_proj.weight[0, 0], attn.out_proj.weight[0, 4] = first, second
    return attn


def test_the_log_shape_is_tau_log1p_of_each_norm():
    attn = _two_heads(3.0, 0.5)
    got = head_group_lasso(attn, "log", tau=2.0)
    assert torch.allclose(got, torch.tensor(2.0 * math.log1p(3.0 / 2.0) + 2.0 * math.log1p(0.5 / 2.0)))
    assert torch.allclose(head_group_lasso(attn), torch.tensor(3.5))  # the default: the plain sum of norms


def test_the_log_shape_prefers_one_head_to_two_and_pulls_the_smaller_harder():
    # the group lasso charges a role split over two heads as much as the same role in one; the log shape less
    split, one = _two_heads(2.0, 2.0), _two_heads(4.0, 0.0)
    assert torch.allclose(head_group_lasso(split), head_group_lasso(one))
    assert head_group_lasso(one, "log") < head_group_lasso(split, "log") - 0.5  # 1.61 against 2.20
    attn = _two_heads(4.0, 1.0)
    head_group_lasso(attn, "log").backward()
    pull = attn.out_proj.weight.grad[0, [0, 4]]
    assert torch.allclose(pull, torch.tensor([1 / 5, 1 / 2]))  # 1 / (1 + n / tau): the smaller head pulled 2.5x harder


def test_an_unknown_shape_or_a_tau_not_positive_is_refused():
    with pytest.raises(ValueError, match="shape"):
        head_group_lasso(_two_heads(1.0, 1.0), "sqrt")
    with pytest.raises(ValueError, match="tau"):
        head_group_lasso(_two_heads(1.0, 1.0), "log", tau=0.0)
    with pytest.raises(SystemExit):
        train.parse_args(["--out", "x", "--head-l1-tau", "0"])


@pytest.mark.parametrize("head_l1", [0.0, 0.5])
def test_head_l1_shrinks_the_heads_and_leaves_the_recorded_loss_the_tasks(tmp_path, head_l1):
    out = tmp_path / f"l1-{head_l1}"
    argv = ["--task", "induction", "--out", str(out), "--d-model", "16", "--heads", "2", "--layers", "1",
            "--d-ff", "16", "--dropout", "0", "--positional", "rotary", "--steps", "30", "--eval-every", "30",
            "--batch-size", "4", "--warmup", "1", "--lr", "1e-2", "--seed", "3", "--quiet", "--threads", "1",
            "--head-l1", str(head_l1)]
    train.main(argv)
    meta = json.loads((out / "config.json").read_text())["task"]["training"]
    assert ("--head-l1 " + str(head_l1)) in meta["command"]
    from explorer.checkpoints import load_checkpoint

    attn = load_checkpoint(out, device="cpu").model.decoder.layers[0].self_attn
    norms = head_norms(attn)
    # 30 steps of lr 1e-2 under a penalty of 0.5 per unit of norm: Adam moves every OV weight about 0.3 toward 0
    if head_l1:
        assert norms.max() < 1.0, norms
    else:
        assert norms.min() > 2.0, norms  # the same run without the penalty keeps its scale (measured 2.64 and 2.43; 0.50 and 0.49 with it)
    assert meta["final_loss"] > 3.0  # the cross-entropy (ln 300 = 5.7 untrained), not the penalty added to it


def test_head_l1_start_leaves_the_steps_before_it_alone(tmp_path):
    from explorer.checkpoints import load_checkpoint

    def norms(*extra):
        out = tmp_path / "-".join(extra or ("plain",))
        train.main(["--task", "induction", "--out", str(out), "--d-model", "16", "--heads", "2", "--layers", "1",
                    "--d-ff", "16", "--dropout", "0", "--positional", "rotary", "--steps", "12", "--eval-every", "12",
                    "--batch-size", "4", "--warmup", "1", "--lr", "1e-2", "--seed", "3", "--quiet", "--threads", "1",
                    *extra])
        return head_norms(load_checkpoint(out, device="cpu").model.decoder.layers[0].self_attn).detach()

    plain = norms()
    assert torch.equal(norms("--head-l1", "0.5", "--head-l1-start", "12"), plain)  # no step reaches the start
    late = norms("--head-l1", "0.5", "--head-l1-start", "6")
    assert (late < plain - 0.02).all()  # six penalised steps: each head moved toward 0 (measured 2.53 -> 2.36, 2.35 -> 2.19)
    # the log shape pulls a head of norm n by 1 / (1 + n / tau) of the lasso's: at n ~ 2.4, tau 1, about 0.3 of it
    logged = norms("--head-l1", "0.5", "--head-l1-start", "6", "--head-l1-shape", "log", "--head-l1-tau", "1")
    assert (logged < plain - 0.005).all() and (logged > late + 0.005).all(), (plain, late, logged)
