"""explorer.interpret.sae against SAELens itself (sae-lens 6.54.12): SAELens reads the folders save_sae writes, we read
the folders SAELens writes, and encode / decode agree within 1e-6 for every architecture and run-time normalisation.

Skipped unless sae_lens is importable. It is not in requirements-test.txt: sae-lens pins transformer-lens < 4, which
the benchmarks' TransformerLens 4.3 does not allow. To run it (requirements-sae-reference.txt):

    python -m venv ../sae-venv && ../sae-venv/bin/pip install torch==2.13.0 && \\
        ../sae-venv/bin/pip install -r requirements-sae-reference.txt
    ../sae-venv/bin/python -m pytest tests/interpret/test_sae_reference.py

tests/interpret/test_sae.py holds the same comparisons against a hand reference that follows SAELens's code, always run.
"""

from __future__ import annotations

import pytest
import torch

sae_lens = pytest.importorskip("sae_lens")

from explorer.interpret.sae import SAE, load_sae, save_sae  # noqa: E402
from tests.interpret.sae_cases import CASES, D, F, inputs, make_sae, random_weights  # noqa: E402

TOLERANCE = 1e-6


def compare(ref, sae: SAE) -> None:
    x = inputs()
    with torch.no_grad():
        f_ref = ref.encode(x)
        x_hat_ref = ref.decode(f_ref)  # right after encode: SAELens keeps the run-time norm's factor in between
    f = sae.encode(x)
    assert int((f_ref != 0).sum()) > 0 and int((f_ref == 0).sum()) > 0  # some latents fire, some do not
    torch.testing.assert_close(f, f_ref, rtol=0, atol=TOLERANCE)
    torch.testing.assert_close(sae.decode(f, x), x_hat_ref, rtol=0, atol=TOLERANCE)
    torch.testing.assert_close(sae.decode(f_ref, x), x_hat_ref, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("case", CASES)
def test_saelens_reads_what_save_sae_writes_and_computes_the_same(case, tmp_path):
    sae = make_sae(case)
    save_sae(sae, tmp_path)
    ref = sae_lens.SAE.load_from_disk(tmp_path)
    assert ref.cfg.architecture() == sae.architecture
    assert ref.cfg.metadata.hook_name == "blocks.1.hook_resid_pre" and ref.cfg.metadata.model_name == "tiny"
    compare(ref, sae)
    compare(ref, load_sae(tmp_path))  # and our own reading of the folder


def saelens_sae(case: str):
    architecture, norm, b_dec_in, rescale = CASES[case]
    config_class = {"standard": sae_lens.StandardSAEConfig, "jumprelu": sae_lens.JumpReLUSAEConfig,
                    "topk": sae_lens.TopKSAEConfig}[architecture]
    extra = dict(k=12, rescale_acts_by_decoder_norm=rescale) if architecture == "topk" else {}
    cfg = config_class(d_in=D, d_sae=F, apply_b_dec_to_input=b_dec_in, normalize_activations=norm, **extra)
    cfg.metadata.hook_name = "blocks.0.hook_resid_post"
    cfg.metadata.model_name = "gpt2-small"
    ref = sae_lens.SAE.get_sae_class_for_architecture(architecture)(cfg)
    with torch.no_grad():
        for name, value in random_weights(architecture, seed=3).items():
            getattr(ref, name).copy_(value)
    return ref


@pytest.mark.parametrize("case", CASES)
def test_load_sae_reads_what_saelens_saves(case, tmp_path):
    ref = saelens_sae(case)
    ref.save_model(tmp_path)
    sae = load_sae(tmp_path)
    assert (sae.architecture, sae.hook_name, sae.model_name) == (CASES[case][0], "blocks.0.hook_resid_post",
                                                                 "gpt2-small")
    compare(ref, sae)


def test_the_reference_is_the_pinned_version():
    assert sae_lens.__version__ == "6.54.12"


def test_saelens_reads_the_shipped_saes_and_computes_the_same():
    from explorer.interpret.sae import shipped_saes
    from explorer.interpret.sae.sources import SAES_DIR

    assert shipped_saes()
    for name in shipped_saes():
        ref = sae_lens.SAE.load_from_disk(SAES_DIR / name)
        sae = load_sae(name)
        assert ref.cfg.architecture() == sae.architecture == "topk"
        assert (ref.cfg.metadata.model_name, ref.cfg.metadata.hook_name) == (sae.model_name, sae.hook_name)
        x = sae.b_dec + 3 * torch.randn(64, sae.d_in, generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            f_ref = ref.encode(x)
            x_hat_ref = ref.decode(f_ref)
        torch.testing.assert_close(sae.encode(x), f_ref, rtol=0, atol=TOLERANCE)
        torch.testing.assert_close(sae.decode(sae.encode(x)), x_hat_ref, rtol=0, atol=1e-5)
