import os
import shutil
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Tests never touch the network: Hub code must work from local files and caches.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tests run small models: one torch thread. On a shared 2-core machine two OpenMP threads made
    tiny matrix products and greedy generation many times slower (threads waiting for each other)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian's chromium for Playwright; browser tests skip without it, except in CI where they fail."""
    found = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is required for the browser tests in CI (apt-get install chromium)")
        pytest.skip("chromium not found (apt-get install chromium); skipping the browser test")
    pytest.importorskip("playwright.sync_api")
    return found


@pytest.fixture(scope="session")
def chromium_args() -> list[str]:
    return list(CHROMIUM_ARGS)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def free_port() -> Callable[[], int]:
    """A function giving a free TCP port on 127.0.0.1."""
    return _free_port
