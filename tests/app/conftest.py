"""App tests: small models on a shared 2-core machine run far faster on one torch thread
(thread hand-offs dominate tiny matrix products); restored after each module."""

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
