"""The Features tab says why a switch or a steering vector changed nothing (explorer.app.tabs.features.why_same), on the
shipped date-gpt and its shipped SAE: a latent switched off that never fires on the sentence (its activation computed
here: 0 at every token the SAE reads, and the output equal to the bit), a steering vector of norm 0 (two texts whose
last-token residuals are equal at the site: the same text, or two dates ending in the same [SEP] at layer 0)."""

from __future__ import annotations

import pytest
import torch

from explorer.app.run.readings import read_texts
from explorer.app.tabs.features.result import SteerRequest, SwitchRequest, steer, switch_latents
from explorer.app.tabs.features.sae_store import SAESource, shared_sae
from explorer.app.tabs.features.text import output_markdown
from explorer.interpret.sae import contrast_vector
from explorer.interpret.sae.features import latent_activations

DATE = "21/11/2026"
SAE_NAME = "date-gpt-L3-resid-pre"


@pytest.fixture(scope="module")
def date_gpt(app):
    return app.load("date-gpt")[1]


def test_a_latent_that_never_fires_is_said_with_its_token_count(date_gpt):
    source = SAESource.of(SAE_NAME, ())
    sae = shared_sae(source, date_gpt.model.device)
    ids, tgt = read_texts(date_gpt, DATE, None, 1024)[0].tensors()
    acts = [latent_activations(date_gpt.model, ids[0], sae, latent, tgt=tgt) for latent in range(sae.d_sae)]
    quiet = next(latent for latent, a in enumerate(acts) if float(a.max()) <= 0)
    firing = max(range(sae.d_sae), key=lambda latent: float(acts[latent].max()))
    out = switch_latents(date_gpt, SwitchRequest("date-gpt", DATE, source, f"{quiet}:off"), 1024)
    assert not out.differs and out.baseline == out.changed  # the splice returned the residual stream as it was
    words = output_markdown(out)
    assert f"Latent {quiet} does not fire on this sentence: its activation is 0 at all {len(acts[quiet])} tokens" in words
    both = switch_latents(date_gpt, SwitchRequest("date-gpt", DATE, source, f"{quiet}:off,{firing}:off"), 1024)
    assert f"Latent {firing} does not fire" not in output_markdown(both)  # it fires: not said of it


def test_a_steering_vector_of_norm_0_is_said_and_why(date_gpt):
    same = steer(date_gpt, SteerRequest(DATE, "3 May 2024", "3 May 2024", 1, 4.0), 1024)
    assert same.baseline == same.changed and "norm 0: the two texts are the same" in output_markdown(same)
    # At the first block's input a token's residual is its embedding and position: two dates of one length, both
    # ending in [SEP], give the same vector there, and different ones a layer later.
    a, b = (torch.tensor(date_gpt.tokenizer.encode(f"[BOS]{t}[SEP]").ids) for t in ("3 May 2024", "9 May 2024"))
    assert float(contrast_vector(date_gpt.model, a, b, "decoder.0.resid_pre").norm()) == 0
    assert float(contrast_vector(date_gpt.model, a, b, "decoder.1.resid_pre").norm()) > 0
    at0 = steer(date_gpt, SteerRequest(DATE, "3 May 2024", "9 May 2024", 0, 4.0), 1024)
    words = output_markdown(at0)
    assert "norm 0: at the input of the first block" in words and "both texts end in “\\[SEP\\]”" in words
    at1 = steer(date_gpt, SteerRequest(DATE, "3 May 2024", "9 May 2024", 1, 4.0), 1024)
    assert "vector has norm 0" not in output_markdown(at1) and not at1.why
