"""The cores a request computes with (explorer.app.serving.cores): all of them alone, a share when others run, set for
the request's own thread only."""

from __future__ import annotations

import threading

import numpy as np
import torch

from explorer.app.serving.cores import CoreShare
from tests.hang import HANG_S


def in_thread(fn):
    result = {}
    worker = threading.Thread(target=lambda: result.update(value=fn()))
    worker.start()
    worker.join(HANG_S)
    assert not worker.is_alive()
    return result["value"]


def test_a_request_alone_gets_every_core_and_shares_them_with_the_ones_that_join():
    cores = CoreShare(4, shared=True)
    with cores.share() as use:
        assert torch.get_num_threads() == 4
        with cores.share() as second:
            assert second() == 2 and torch.get_num_threads() == 2
            with cores.share() as third:
                assert third() == 1
            assert use() == 2  # the third one ended
        assert use() == 4 and torch.get_num_threads() == 4
    assert cores.threads() == 4


def test_a_fixed_count_is_kept_whatever_runs():
    cores = CoreShare(3)
    with cores.share(), cores.share() as use:
        assert use() == 3


def test_the_count_is_the_calling_threads_own():
    """OpenMP's thread count belongs to the thread that sets it: a request's share changes no other thread's."""
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)

        def request() -> int:
            with CoreShare(2, shared=True).share():
                return torch.get_num_threads()

        assert in_thread(request) == 2 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_a_request_that_fails_is_no_longer_counted():
    cores = CoreShare(2, shared=True)
    try:
        with cores.share():
            raise ValueError("boom")
    except ValueError:
        pass
    with cores.share() as use:
        assert use() == 2


def test_a_share_changes_the_numbers_only_in_their_last_bits(app):
    """A request alone computes with more threads than one among others; float32 kernels then sum in another
    order, so the same Run may differ by rounding, never by more (the answers shown are the same)."""
    from explorer.app.run.toggles import Toggles
    from explorer.app.run.view import View

    _, loaded = app.build("encoder", d_model=64, n_heads=4, d_ff=256)
    before = torch.get_num_threads()
    runs = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            runs.append(app.analyze(loaded, "the quick brown fox jumps over the lazy dog " * 6, app.DATE1,
                                    Toggles(padding=True, causal=True, custom="local window", window=2),
                                    View("encoder", 1, 2, 2)))
    finally:
        torch.set_num_threads(before)
    one, two = runs
    np.testing.assert_allclose(one.reduction("attention").toggled.weights, two.reduction("attention").toggled.weights,
                               atol=1e-6)
    np.testing.assert_allclose(one.reduction("rollout").mean, two.reduction("rollout").mean, atol=1e-6)
    assert one.output.rows == two.output.rows and one.tokens == two.tokens
