"""A JupyterLab server for the notebook browser test: started on a temporary folder, on 127.0.0.1, with its config,
data, runtime and workspace folders inside the test's own (nothing of the user's home read or written), the repo on
the kernels' path, and no request of its own to the internet (no news, no update check). Ready once its log says it
is running (an event, bounded by the hang guard)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.hang import HANG_S

ROOT = Path(__file__).resolve().parents[2]
# No "Select Kernel" dialog (the notebook's own kernel starts), no news or update requests from the page.
SETTINGS = {"@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True},
            "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False}}


@contextmanager
def jupyter_lab(folder: Path, port: int) -> Iterator[str]:
    """The server's base URL (with "?token=" to append) while the block runs; stopped after it."""
    token = secrets.token_hex(16)
    home = folder / ".jupyter-home"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"), "IPYTHONDIR": str(home / "ipython")}
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.root_dir={folder}", f"--IdentityProvider.token={token}", "--ServerApp.port_retries=0",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.expose_app_in_browser=True", "--LabApp.extension_manager=readonly", "--allow-root"]
    for plugin, values in SETTINGS.items():  # the user's settings of this server only
        (home / "settings" / plugin).parent.mkdir(parents=True, exist_ok=True)
        (home / "settings" / f"{plugin}.jupyterlab-settings").write_text(json.dumps(values))
    proc = subprocess.Popen(cmd, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ready, log = threading.Event(), []

    def read() -> None:
        for line in proc.stderr:
            log.append(line)
            if "is running at" in line or "http://127.0.0.1" in line:
                ready.set()
        ready.set()  # the server ended: the wait below ends too, and says so

    threading.Thread(target=read, daemon=True).start()
    try:
        assert ready.wait(HANG_S) and proc.poll() is None, "JupyterLab did not start:\n" + "".join(log[-30:])
        base = f"http://127.0.0.1:{port}/"
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(HANG_S)
        except subprocess.TimeoutExpired:
            proc.kill()

