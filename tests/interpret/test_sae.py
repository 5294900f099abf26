"""explorer.interpret.sae, the format: encode / decode equal a hand reference written from SAELens 6.54.12's code (file
and line cited at each step) within 1e-6 for every architecture and run-time normalisation; save -> load keeps every
tensor and setting; configs from before SAELens 6 are read as SAELens reads them; every refusal names the file and the
key; a model-name mismatch is a warning; hook names map onto the model's sites (and refuse the points a family lacks);
latent switches parse, format and round-trip. tests/interpret/test_sae_reference.py compares with SAELens itself."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from explorer.interpret import sae as sae_module
from explorer.interpret.sae import (SAE, LatentSwitch, LatentSwitches, SAEFileError, SAEWarning, hook_site,
                                    load_sae, log_density, random_sae, resolve_sae_source, save_sae, site_hook_name)
from explorer.interpret.sae import sources as sae_sources
from explorer.model import TransformerConfig, Transformer
from tests.interpret.sae_cases import CASES, D, F, inputs, make_sae

TOLERANCE = 1e-6


# ------------------------------------------------------------------------------------------ hand reference
def reference_encode(sae: SAE, x: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """SAELens 6.54.12's encode, step by step (paths under sae_lens/saes/). Returns the latents and the run-time
    normalisation's state, which SAELens keeps on the module for decode."""
    state = {}
    sae_in = x.to(torch.float32)  # sae.py:524 process_sae_in casts to the SAE's dtype
    if sae.normalize_activations == "constant_norm_rescale":  # sae.py:370-381
        state["coeff"] = (sae.d_in ** 0.5) / sae_in.norm(dim=-1, keepdim=True)
        sae_in = sae_in * state["coeff"]
    elif sae.normalize_activations == "layer_norm":  # sae.py:384-395, eps=1e-5, torch.std (Bessel)
        mu = sae_in.mean(dim=-1, keepdim=True)
        sae_in = sae_in - mu
        std = sae_in.std(dim=-1, keepdim=True)
        sae_in = sae_in / (std + 1e-5)
        state["mu"], state["std"] = mu, std
    sae_in = sae_in - sae.b_dec * sae.apply_b_dec_to_input  # sae.py:531-533
    hidden = sae_in @ sae.W_enc + sae.b_enc  # standard_sae.py:65, jumprelu_sae.py:151, topk_sae.py:257
    if sae.architecture == "standard":
        return torch.relu(hidden), state  # standard_sae.py:67, activation_fn = nn.ReLU() (sae.py get_activation_fn)
    if sae.architecture == "jumprelu":  # jumprelu_sae.py:153-161: relu, then the mask hidden > threshold
        return torch.relu(hidden) * (hidden > sae.threshold).to(hidden.dtype), state
    if sae.rescale_acts_by_decoder_norm:  # topk_sae.py:258-259
        hidden = hidden * sae.W_dec.norm(dim=-1)
    values, indices = torch.topk(hidden, k=sae.k, dim=-1, sorted=False)  # topk_sae.py:69-71 TopK.forward
    return torch.zeros_like(hidden).scatter_(-1, indices, values.relu()), state  # ReLU after the top-k, :114-116


def reference_decode(sae: SAE, f: torch.Tensor, state: dict) -> torch.Tensor:
    if sae.architecture == "topk" and sae.rescale_acts_by_decoder_norm:  # topk_sae.py:210-225 act_times_W_dec
        f = f * (1 / sae.W_dec.norm(dim=-1))
    out = f @ sae.W_dec + sae.b_dec  # standard_sae.py:76, jumprelu_sae.py:169, topk_sae.py:272-277
    if sae.normalize_activations == "constant_norm_rescale":  # sae.py:376-379
        out = out / state["coeff"]
    elif sae.normalize_activations == "layer_norm":  # sae.py:397-405: without the eps
        out = out * state["std"] + state["mu"]
    return out


@pytest.mark.parametrize("case", CASES)
def test_encode_and_decode_follow_saelens(case):
    sae = make_sae(case)
    x = inputs()
    f_ref, state = reference_encode(sae, x)
    f = sae.encode(x)
    assert 0 < int((f_ref != 0).sum()) < f_ref.numel()
    torch.testing.assert_close(f, f_ref, rtol=0, atol=TOLERANCE)
    torch.testing.assert_close(sae.decode(f, x), reference_decode(sae, f_ref, state), rtol=0, atol=TOLERANCE)
    # any leading dimensions, and the latents of a few columns (other matrix shapes: float32 rounding apart)
    torch.testing.assert_close(sae.encode(x[0, 0]), f[0, 0], rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(sae.encode_latents(x, torch.tensor([5, 0, 77])), f[..., [5, 0, 77]], rtol=1e-6,
                               atol=1e-5)


@pytest.mark.parametrize("case", ["standard", "standard-layer-norm", "topk-rescaled-constant-norm"])
def test_decode_change_is_the_difference_of_two_decodes(case):
    sae = make_sae(case)
    x = inputs()
    f = sae.encode(x)
    latents = torch.tensor([3, 40, 41])
    delta = torch.randn(*f.shape[:-1], 3)
    changed = f.clone()
    changed[..., latents] += delta
    torch.testing.assert_close(sae.decode_change(delta, latents, x), sae.decode(changed, x) - sae.decode(f, x),
                               rtol=0, atol=1e-5)
    assert torch.equal(sae.decode_change(torch.zeros_like(delta), latents, x), torch.zeros_like(x))


def test_run_time_normalisations_need_the_input_to_decode():
    sae = make_sae("standard-layer-norm")
    with pytest.raises(ValueError, match="decode needs the input x"):
        sae.decode(sae.encode(inputs()))


def test_the_sae_object_checks_its_own_shapes():
    w = make_sae("standard")
    with pytest.raises(ValueError, match=r"W_dec must be \(96, 24\)"):
        SAE(w.W_enc, w.b_enc, w.W_dec.T, w.b_dec, "standard", "blocks.0.hook_resid_pre")
    with pytest.raises(ValueError, match="needs k between 1 and d_sae=96"):
        SAE(w.W_enc, w.b_enc, w.W_dec, w.b_dec, "topk", "blocks.0.hook_resid_pre", k=0)
    with pytest.raises(ValueError, match="must end with the SAE's width d_in=24"):
        w.encode(torch.zeros(3, 7))


# ------------------------------------------------------------------------------------------ save / load
@pytest.mark.parametrize("case", CASES)
def test_save_then_load_keeps_every_tensor_and_setting(case, tmp_path):
    sae = make_sae(case)
    sae = SAE(**{**sae.__dict__, "sparsity": log_density(torch.arange(F), 200), "metadata": {"context_size": 128}})
    save_sae(sae, tmp_path, card="# an SAE\n")
    back = load_sae(tmp_path)
    for name in ("W_enc", "b_enc", "W_dec", "b_dec", "threshold", "sparsity"):
        a, b = getattr(sae, name), getattr(back, name)
        assert (a is None and b is None) or torch.equal(a, b), name
    for name in ("architecture", "hook_name", "k", "apply_b_dec_to_input", "normalize_activations",
                 "rescale_acts_by_decoder_norm", "model_name"):
        assert getattr(sae, name) == getattr(back, name), name
    assert back.metadata["context_size"] == 128 and back.metadata["sae_lens_version"] == "6.54.12"
    assert (tmp_path / "README.md").read_text() == "# an SAE\n"
    cfg = json.loads((tmp_path / "cfg.json").read_text())
    assert cfg["architecture"] == sae.architecture and cfg["metadata"]["hook_name"] == "blocks.1.hook_resid_pre"


def test_sparsity_is_log10_density():
    torch.testing.assert_close(log_density(torch.tensor([0, 5, 10]), 10),
                               torch.log10(torch.tensor([0.0, 0.5, 1.0]) + 1e-10))


def test_a_config_from_before_saelens_6_is_read_as_saelens_reads_it(tmp_path):
    """handle_pre_6_0_config: hook_point -> hook_name, activation_fn "topk" with activation_fn_kwargs.k -> topk,
    normalize_activations false -> "none", apply_b_dec_to_input defaults to true; top-level model_name."""
    sae = make_sae("topk")
    save_sae(sae, tmp_path)
    cfg = {"d_in": D, "d_sae": F, "hook_point": "blocks.1.hook_resid_pre", "model_name": "gpt2-small",
           "activation_fn_str": "topk", "activation_fn_kwargs": {"k": 12}, "normalize_activations": False,
           "sae_lens_training_version": "3.5.0", "dtype": "float32"}
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    back = load_sae(tmp_path)
    assert (back.architecture, back.k, back.hook_name, back.model_name, back.normalize_activations,
            back.apply_b_dec_to_input) == ("topk", 12, "blocks.1.hook_resid_pre", "gpt2-small", "none", True)
    torch.testing.assert_close(back.encode(inputs()), sae.encode(inputs()), rtol=0, atol=0)


def saved(tmp_path: Path, case: str = "standard", **kw) -> Path:
    save_sae(make_sae(case, **kw), tmp_path)
    return tmp_path


def edit_cfg(folder: Path, **changes) -> None:
    cfg = json.loads((folder / "cfg.json").read_text())
    for key, value in changes.items():
        if key == "hook_name":
            cfg["metadata"]["hook_name"] = value
        elif value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    (folder / "cfg.json").write_text(json.dumps(cfg))


def edit_weights(folder: Path, drop: str | None = None, **tensors) -> None:
    weights = load_file(str(folder / "sae_weights.safetensors"))
    if drop:
        del weights[drop]
    weights.update(tensors)
    save_file(weights, str(folder / "sae_weights.safetensors"))


def test_a_missing_tensor_is_refused_by_file_and_key(tmp_path):
    edit_weights(saved(tmp_path), drop="b_enc")
    with pytest.raises(SAEFileError, match=r'sae_weights.safetensors in .*: tensor "b_enc" is missing'):
        load_sae(tmp_path)


def test_a_jumprelu_without_its_threshold_is_refused(tmp_path):
    edit_weights(saved(tmp_path, "jumprelu"), drop="threshold")
    with pytest.raises(SAEFileError, match='tensor "threshold" is missing'):
        load_sae(tmp_path)


def test_a_nan_is_refused_by_file_and_key(tmp_path):
    w = make_sae("standard").W_dec.clone()
    w[3, 4] = float("nan")
    edit_weights(saved(tmp_path), W_dec=w)
    with pytest.raises(SAEFileError, match=r'sae_weights.safetensors in .*: tensor "W_dec" holds 1 NaN'):
        load_sae(tmp_path)


def test_a_tensor_that_does_not_fit_the_config_is_refused(tmp_path):
    edit_cfg(saved(tmp_path), d_sae=F + 1)
    with pytest.raises(SAEFileError, match=r'tensor "W_enc" is \(24, 96\), but cfg.json in .* says d_in=24, d_sae=97'):
        load_sae(tmp_path)


def test_unexpected_tensors_are_refused(tmp_path):
    edit_weights(saved(tmp_path), extra=torch.zeros(3))
    with pytest.raises(SAEFileError, match="unexpected tensors extra"):
        load_sae(tmp_path)


def test_an_all_ones_scaling_factor_is_dropped_as_saelens_drops_it(tmp_path):
    edit_weights(saved(tmp_path), scaling_factor=torch.ones(F))
    load_sae(tmp_path)
    edit_weights(tmp_path, scaling_factor=torch.full((F,), 2.0))
    with pytest.raises(SAEFileError, match='"scaling_factor" is not all ones'):
        load_sae(tmp_path)


@pytest.mark.parametrize("architecture", ["gated", "batchtopk", "matching_pursuit", "transcoder"])
def test_an_unknown_architecture_is_refused_by_name(tmp_path, architecture):
    edit_cfg(saved(tmp_path), architecture=architecture)
    with pytest.raises(SAEFileError, match=rf'cfg.json in .*: "architecture" \'{architecture}\' is not supported; '
                                           "supported: standard, topk, jumprelu"):
        load_sae(tmp_path)


def test_an_unknown_normalisation_is_refused_by_name(tmp_path):
    edit_cfg(saved(tmp_path), normalize_activations="whatever")
    with pytest.raises(SAEFileError, match="\"normalize_activations\" 'whatever' is not supported"):
        load_sae(tmp_path)


@pytest.mark.parametrize("hook", ["blocks.1.attn.hook_z", "blocks.1.hook_mlp_out", "hook_embed"])
def test_a_hook_outside_the_residual_stream_is_refused_by_name(tmp_path, hook):
    edit_cfg(saved(tmp_path), hook_name=hook)
    with pytest.raises(SAEFileError, match=rf'"metadata.hook_name": hook \'{hook}\' is not a residual-stream point'):
        load_sae(tmp_path)


def test_head_saes_are_refused(tmp_path):
    edit_cfg(saved(tmp_path), reshape_activations="hook_z")
    with pytest.raises(SAEFileError, match="reshape_activations"):
        load_sae(tmp_path)


def test_a_dictionary_above_the_budget_is_refused_before_its_weights_are_read(tmp_path):
    (saved(tmp_path) / "sae_weights.safetensors").write_bytes(b"not read")
    with pytest.raises(SAEFileError, match=r"cfg.json in .*: a dictionary of d_sae=96 latents on d_in=24 needs 0 MB, "
                                           r"above the limit of 0 MB"):
        load_sae(tmp_path, max_bytes=10_000)


def test_missing_files_and_folders_are_named(tmp_path):
    with pytest.raises(SAEFileError, match="does not exist"):
        load_sae(tmp_path / "absent")
    (saved(tmp_path) / "sae_weights.safetensors").unlink()
    with pytest.raises(SAEFileError, match="missing file sae_weights.safetensors"):
        load_sae(tmp_path)


def tiny_model(**options) -> Transformer:
    config = dict(arch="decoder", vocab_size=40, d_model=D, n_heads=4, n_layers=2, d_ff=48, max_len=16,
                  norm_first=True)
    config.update(options)
    return Transformer(TransformerConfig(**config)).eval()


def test_a_width_that_does_not_match_the_model_is_refused_by_file_and_key(tmp_path):
    saved(tmp_path)
    with pytest.raises(SAEFileError, match=r'cfg.json in .*: "d_in" is 24, but the model\'s residual stream is 32 wide'):
        load_sae(tmp_path, model=tiny_model(d_model=32))


def test_a_hook_the_model_lacks_is_refused_by_file_and_key(tmp_path):
    edit_cfg(saved(tmp_path), hook_name="blocks.1.hook_resid_mid")
    with pytest.raises(SAEFileError, match=r'cfg.json in .*: "metadata.hook_name": .*parallel residual'):
        load_sae(tmp_path, model=tiny_model(parallel_residual=True))
    edit_cfg(tmp_path, hook_name="blocks.5.hook_resid_pre")
    with pytest.raises(SAEFileError, match="has blocks 0..1"):
        load_sae(tmp_path, model=tiny_model())


def test_a_model_name_that_differs_is_a_warning_kept_in_the_notes(tmp_path):
    saved(tmp_path, model_name="gpt2-small")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_sae(tmp_path, model=tiny_model(), model_name="openai-community/gpt2").notes == ()
    with pytest.warns(SAEWarning, match="the SAE was trained on 'gpt2-small', the model is 'EleutherAI/pythia-70m'"):
        sae = load_sae(tmp_path, model=tiny_model(), model_name="EleutherAI/pythia-70m")
    assert len(sae.notes) == 1 and "cfg.json in" in sae.notes[0]


# ------------------------------------------------------------------------------------------ sources
def test_text_sources_go_through_the_allow_list(tmp_path, monkeypatch):
    inside = saved(tmp_path / "allowed" / "my-sae")
    assert resolve_sae_source(str(inside), [tmp_path / "allowed"]) == ("local", str(inside.resolve()), None)
    assert resolve_sae_source("my-sae", [tmp_path / "allowed"])[0] == "local"
    with pytest.raises(SAEFileError, match="neither a shipped SAE"):
        resolve_sae_source(str(inside), [tmp_path / "elsewhere"])
    assert resolve_sae_source("jbloom/GPT2-Small-SAEs-Reformatted/blocks.8.hook_resid_pre") == \
        ("hub", "jbloom/GPT2-Small-SAEs-Reformatted/blocks.8.hook_resid_pre", None)
    assert resolve_sae_source("owner/name@v1.0/a/b") == ("hub", "owner/name/a/b", "v1.0")
    with pytest.raises(SAEFileError):
        resolve_sae_source("owner/name/../secrets")
    monkeypatch.setattr(sae_sources, "SAES_DIR", tmp_path / "allowed")
    assert sae_sources.shipped_saes() == ["my-sae"]
    assert resolve_sae_source("my-sae") == ("shipped", str(tmp_path / "allowed" / "my-sae"), None)
    assert load_sae("my-sae").source.startswith("shipped SAE")


def fake_hub_repo(cache: Path, repo_id: str, files: dict[str, Path]) -> Path:
    """huggingface_hub's cache layout with files in sub-folders: models--owner--name/snapshots/<commit>/..."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    for name, source in files.items():
        target = repo / "snapshots" / commit / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    return repo / "snapshots" / commit


def test_a_hub_sae_is_read_from_its_folder_and_its_budget_checked_before_the_weights(tmp_path, monkeypatch):
    folder = saved(tmp_path / "files")
    sub = "layer-1/res"
    fake_hub_repo(tmp_path / "hub", "someone/saes",
                  {f"{sub}/{name}": folder / name for name in ("cfg.json", "sae_weights.safetensors")})
    from explorer import loading

    fetched = []
    real = loading.snapshot_download

    def spy(repo_id, **kwargs):
        fetched.append(kwargs["allow_patterns"])
        return real(repo_id, **kwargs)

    monkeypatch.setattr(loading, "snapshot_download", spy)
    sae = load_sae(f"someone/saes/{sub}", cache_dir=tmp_path / "hub")
    torch.testing.assert_close(sae.W_enc, make_sae("standard").W_enc, rtol=0, atol=0)
    assert "someone/saes" in sae.source and sub in sae.source
    assert fetched[0] == [f"{sub}/cfg.json"]
    fetched.clear()
    with pytest.raises(SAEFileError, match="above the limit"):
        load_sae(f"someone/saes/{sub}", cache_dir=tmp_path / "hub", max_bytes=1000)
    assert fetched == [[f"{sub}/cfg.json"]]  # refused on cfg.json: the weights were never asked for


# ------------------------------------------------------------------------------------------ hook names
def test_hook_names_map_onto_the_models_sites():
    decoder = tiny_model().config
    encoder = TransformerConfig(arch="encoder", vocab_size=40, d_model=D, n_heads=4, n_layers=2, d_ff=48)
    seq2seq = TransformerConfig(arch="encoder-decoder", vocab_size=40, d_model=D, n_heads=4, n_layers=2, d_ff=48)
    assert hook_site(decoder, "blocks.0.hook_resid_pre") == "decoder.0.resid_pre"
    assert hook_site(decoder, "blocks.1.hook_resid_mid") == "decoder.1.resid_mid"
    assert hook_site(encoder, "blocks.1.hook_resid_post") == "encoder.1.resid_post"
    assert hook_site(seq2seq, "encoder.0.hook_resid_post") == "encoder.0.resid_post"
    assert hook_site(seq2seq, "decoder.1.hook_resid_mid_cross") == "decoder.1.resid_mid_cross"
    for config, name, message in [
        (seq2seq, "blocks.0.hook_resid_pre", "this encoder-decoder names its stacks"),
        (decoder, "decoder.0.hook_resid_pre", "names an encoder-decoder's stack"),
        (decoder, "blocks.2.hook_resid_pre", "has blocks 0..1"),
        (decoder, "blocks.0.hook_resid_mid_cross", "only an encoder-decoder's decoder"),
        (seq2seq, "encoder.0.hook_resid_mid_cross", "only an encoder-decoder's decoder"),
        (tiny_model(parallel_residual=True).config, "blocks.0.hook_resid_mid", "parallel residual"),
        (decoder, "blocks.0.attn.hook_z", "not a residual-stream point"),
    ]:
        with pytest.raises(ValueError, match=message):
            hook_site(config, name)
    assert site_hook_name(decoder, "decoder.1.resid_post") == "blocks.1.hook_resid_post"
    assert site_hook_name(seq2seq, "encoder.1.resid_pre") == "encoder.1.hook_resid_pre"


# ------------------------------------------------------------------------------------------ switches
def test_switches_parse_format_and_round_trip():
    text = "40:clamp=3.5, 12:off,7:add=-2,9:add=1e-05,3:clamp=0.1"
    switches = LatentSwitches.parse(text)
    assert switches.format() == "3:clamp=0.1,7:add=-2,9:add=1e-05,12:off,40:clamp=3.5"
    assert LatentSwitches.parse(switches.format()) == switches
    assert [s.latent for s in switches] == [3, 7, 9, 12, 40]
    assert switches.by_mode("off", "clamp") == ([3, 12, 40], [0.1, 0.0, 3.5])
    assert LatentSwitches.parse("") == LatentSwitches() and not LatentSwitches.parse(" , ")
    assert LatentSwitches.of(None) == LatentSwitches() and LatentSwitches.of(text) == switches
    assert LatentSwitches.of([LatentSwitch(5, "add", 2)]).format() == "5:add=2"
    for value in (0.1 + 0.2, -1e-300, 123456789.125, 2.0 ** 60):  # exact round trip of any finite float
        one = LatentSwitches((LatentSwitch(1, "clamp", value),))
        assert LatentSwitches.parse(one.format()).items[0].value == value


@pytest.mark.parametrize("text, message", [
    ("12", "is not LATENT:off"), ("12:on", "is not LATENT:off"), ("12:off=1", "off takes no value"),
    ("12:clamp", "clamp needs =VALUE"), ("12:add=abc", "'abc' is not a number"), ("12:clamp=nan", "finite"),
    ("12:add=inf", "finite"), ("-3:off", "is not LATENT:off"), ("3:off,3:clamp=1", "latent 3 is switched twice"),
    (",".join(f"{i}:off" for i in range(65)), "at most 64"),
])
def test_bad_switches_are_refused_by_name(text, message):
    with pytest.raises(ValueError, match=message):
        LatentSwitches.parse(text)


def test_switches_are_checked_against_the_saes_latents():
    with pytest.raises(ValueError, match="latent 96 is not a latent of this SAE: its latents are 0..95"):
        LatentSwitches.parse("96:off").check(F)
    assert LatentSwitches.parse("95:off").check(F)


def test_random_sae_is_seeded():
    a, b = (random_sae(16, 64, "blocks.0.hook_resid_pre", architecture="jumprelu", seed=3) for _ in range(2))
    assert torch.equal(a.W_enc, b.W_enc) and torch.equal(a.threshold, b.threshold)
    assert random_sae(16, 64, "blocks.0.hook_resid_pre", architecture="topk").k == 32
    assert os.path.basename(sae_module.__file__) == "__init__.py"
