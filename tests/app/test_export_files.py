"""The Download's files on disk (explorer.app.export.download_files): one per session, replaced by its next download and
removed when the session ends, all of them within the server's budget, in a folder of the server's own under random
names, and no copy by Gradio; served, 10 downloads from five clients never pass the budget, and nothing can be
uploaded."""

from __future__ import annotations

import gc
import os
import re
import tempfile
from pathlib import Path

import pytest

from explorer.app.export.download_files import DownloadFiles
from explorer.app.serving.errors import AppError
from tests.hang import HANG_S, until

TEXT = "<!DOCTYPE html>" + "x" * 985  # 1,000 bytes


def on_disk(folder: Path) -> tuple[int, list[Path]]:
    """Bytes and files under `folder`, read while the server may be deleting some: a folder or file gone between
    listing and reading is not counted (rglob raised FileNotFoundError for a folder gone under a loaded run)."""
    files, size = [], 0
    for where, _, names in os.walk(folder):  # os.walk skips a folder that vanished
        for name in names:
            try:
                size += (Path(where) / name).stat().st_size
            except FileNotFoundError:
                continue
            files.append(Path(where) / name)
    return size, files


def test_a_session_keeps_one_file_replaced_by_its_next_download(tmp_path):
    files = DownloadFiles(10_000, tmp_path)
    first = files.write("session-a", "view-1.html", TEXT)
    second = files.write("session-a", "view-2.html", TEXT + "y")
    other = files.write("session-b", "view-1.html", TEXT)
    assert not first.exists() and not first.parent.exists()
    assert second.read_text() == TEXT + "y" and other.read_text() == TEXT
    assert sorted(on_disk(tmp_path)[1]) == sorted([second, other]) and files.bytes == 2001 == on_disk(tmp_path)[0]
    files.forget("session-a")  # the session ended
    files.forget("never-downloaded")
    assert not second.exists() and on_disk(tmp_path) == (1000, [other])


def test_the_files_together_stay_within_the_budget(tmp_path):
    """Ten sessions in a budget of three files: the least recently written go, the bytes never pass the budget."""
    files = DownloadFiles(3_500, tmp_path)
    paths = []
    for n in range(10):
        paths.append(files.write(f"session-{n}", "view.html", TEXT))
        assert on_disk(tmp_path)[0] == files.bytes <= 3_500
    assert [p.exists() for p in paths] == [False] * 7 + [True] * 3
    files.write("session-7", "view.html", TEXT)  # a kept session writing again is the most recent one
    files.write("session-new", "view.html", TEXT)
    assert sorted(files.files) == ["session-7", "session-9", "session-new"]


def test_a_file_larger_than_the_budget_is_refused_in_words(tmp_path):
    files = DownloadFiles(999, tmp_path)
    with pytest.raises(AppError, match=r"would take 1,000 bytes, more than the 999 bytes this server keeps for "
                                       r"downloads \(--download-disk\)") as err:
        files.write("session-a", "view.html", TEXT)
    assert str(tmp_path) not in str(err.value) and on_disk(tmp_path) == (0, [])
    with pytest.raises(ValueError, match="positive"):
        DownloadFiles(0, tmp_path)


def test_paths_are_the_servers_own_and_random(tmp_path):
    """Under a folder the server made, a fresh 128-bit name per download: nothing from the session's key (a visitor
    chooses it) reaches the path, and the server's folder goes with the server."""
    files = DownloadFiles(10**6, tmp_path)
    paths = [files.write("../../etc/passwd", "view.html", TEXT), files.write("../../etc/passwd", "view.html", TEXT),
             files.write("/tmp/x", "../../escape.html", TEXT)]
    root = files.root
    assert root.parent == tmp_path and root.name.startswith("explorer-downloads-")
    for path in paths:
        assert path.parent.parent == root and re.fullmatch(r"[0-9a-f]{32}", path.parent.name), path
        assert "etc" not in str(path.relative_to(tmp_path)) and "tmp" not in path.parent.name
    assert paths[2].name == "escape.html" and len({p.parent.name for p in paths}) == 3
    del files
    gc.collect()
    assert not root.exists()


@pytest.fixture
def served(tmp_path, monkeypatch, free_port):
    """The app served with Gradio's folder and the system's temp folder in tmp_path, and a budget of `BUDGET`:
    whatever the server writes for a download lands in one of the two."""
    from explorer.app.demo import build_demo, launch_kwargs, queue

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    monkeypatch.setenv("GRADIO_HEARTBEAT_INTERVAL", "0.05")  # a closed client is noticed at its next heartbeat
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    demo = queue(build_demo(device="cpu", download_disk=BUDGET))
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                **launch_kwargs())
    try:
        yield demo
    finally:
        demo.close()


BUDGET = 18 * 1024**2  # three files of the default view (about 4.8 MB each)


def refuse_uploads(served, tmp_path) -> None:
    """Gradio's upload routes would keep whatever any client posts (the app has no file input): refused in words."""
    import httpx

    from explorer.app.serving.upload_guard import MESSAGE

    for route in ("gradio_api/upload", "gradio_api/upload/", "gradio_api/process_recording"):
        answer = httpx.post(served.local_url + route, files={"files": ("a.bin", b"0" * 1_000_000)}, timeout=HANG_S)
        assert (answer.status_code, answer.text) == (403, MESSAGE), route
    assert on_disk(tmp_path / "gradio")[0] + on_disk(tmp_path / "tmp")[0] == 0
    assert httpx.get(served.local_url + "config", timeout=HANG_S).status_code == 200  # the rest is served


def test_many_downloads_leave_bounded_bytes_and_uploads_are_refused(served, tmp_path):
    """10 /download_view calls from five clients: after each, the server's files in Gradio's folder and the temp
    folder take at most the budget (the least recently written let go), no file is copied; the clients still get
    their file; a client that goes (its heartbeat ends: Gradio's unload) takes its file with it. The size: five
    sessions' first files pass the budget of three (the 4th and 5th let the oldest go), and each client's second
    download replaces its own file; both rules show from the 6th call on (until issue 39: 30 calls). First, on the
    same served app (one app built, not two), uploads are refused and write nothing (refuse_uploads)."""
    import gradio_client

    refuse_uploads(served, tmp_path)
    written = [tmp_path / "gradio", tmp_path / "tmp"]
    clients = [gradio_client.Client(served.local_url, verbose=False, httpx_kwargs={"timeout": HANG_S},
                                    download_files=str(tmp_path / f"client-{n}")) for n in range(5)]
    for n, client in enumerate(clients):
        client.predict(sentence1=f"{n + 1} May 2024", sentence2="", api_name="/analyze")
    sizes = []
    for call in range(10):
        client = clients[call % 5]
        got, status = client.predict("attention" if call % 2 else "overview", api_name="/download_view")
        assert status == "", status
        assert "<!DOCTYPE html>" in Path(got).read_text(encoding="utf-8")[:100]
        n_bytes = sum(on_disk(folder)[0] for folder in written)
        assert n_bytes <= BUDGET, (call, n_bytes)
        sizes.append(n_bytes)
    _, kept = on_disk(tmp_path / "gradio")
    button = next(b for b in served.blocks.values() if getattr(b, "elem_id", None) == "download-file")
    assert button.temp_files == {str(f) for f in kept}  # Gradio's own list of them keeps no gone file
    assert on_disk(tmp_path / "tmp") == (0, [])  # nothing in the system's temp folder
    assert len(kept) == 3 and all(f.parent.parent.name.startswith("explorer-downloads-") for f in kept), kept
    assert max(sizes) > 2 * 4 * 1024**2  # the bound was reached (three files of more than 4 MB), and held
    # a client that goes: the file of its last download goes with it
    clients[4].predict("attention", api_name="/download_view")
    mine = set(on_disk(tmp_path / "gradio")[1]) - set(kept)
    assert len(mine) == 1
    clients[4].close()
    until(lambda: not any(f.exists() for f in mine), "the closed client's file to go")
    assert len(on_disk(tmp_path / "gradio")[1]) == 2  # the others' files stay
    for client in clients[:4]:
        client.close()
    served.close()  # the server stops: Gradio deletes what it was handed (delete_cache), the last two files
    assert on_disk(tmp_path / "gradio")[0] == 0
