"""The Download's files on disk: one per session, all of them together within a byte budget (--download-disk).

Where. Gradio copies a file a handler returns into its cache folder unless the file is inside that folder already
(gradio.blocks.Block.move_resource_to_block_cache), so the files are written inside it, in a folder this server makes
there (tempfile.mkdtemp; removed at the interpreter's exit, its files already when the server stops: delete_cache):
one copy per file, none in the system's temp folder.
Each file sits in a folder named by 128 random bits drawn for that download (`secrets`): nothing in its path comes
from a visitor, and no session can guess another's (Gradio serves any file of its cache folder to a client who
names it).

How many. A session's next download replaces its file; the session's end (`forget`: the page's unload) removes it;
when the files together would pass the budget, the least recently written go first, and a file larger than the whole
budget is refused with a message. So the bytes on disk never exceed the budget, however many clients download.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from pathlib import Path

from ..serving.errors import AppError
from ..serving.limits import format_bytes


class DownloadFiles:
    """The files of one server's downloads. `under`: the folder Gradio serves from without a copy (a component's
    GRADIO_CACHE)."""

    def __init__(self, budget: int, under: str | Path):
        if budget <= 0:
            raise ValueError("the downloads' budget must be a positive number of bytes")
        self.budget, self.under = budget, Path(under)
        self.root: Path | None = None  # made at the first download
        self.files: OrderedDict[Hashable, tuple[Path, int]] = OrderedDict()  # session -> (file, bytes), oldest first
        self.bytes = 0
        self.lock = threading.Lock()

    def write(self, session: Hashable, name: str, text: str) -> Path:
        """`text` as the session's file `name` (a name made by the app, view_file.file_name), replacing the
        session's last one; older files of other sessions go if the budget needs their room. -> the file's path."""
        data = text.encode("utf-8")
        if len(data) > self.budget:
            raise AppError(f"This view's file would take {format_bytes(len(data))}, more than the "
                           f"{format_bytes(self.budget)} this server keeps for downloads (--download-disk).")
        with self.lock:
            self._drop(session)
            while self.files and self.bytes + len(data) > self.budget:
                self._drop(next(iter(self.files)))
            folder = self._root() / secrets.token_hex(16)
            folder.mkdir()
            path = folder / Path(name).name
            try:
                path.write_bytes(data)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            self.files[session] = (path, len(data))
            self.bytes += len(data)
        return path

    def forget(self, session: Hashable) -> None:
        """The session ended: its file goes."""
        with self.lock:
            self._drop(session)

    def _drop(self, session: Hashable) -> None:
        if session not in self.files:
            return
        path, n_bytes = self.files.pop(session)
        self.bytes -= n_bytes
        shutil.rmtree(path.parent, ignore_errors=True)

    def _root(self) -> Path:
        if self.root is None:
            self.under.mkdir(parents=True, exist_ok=True)
            self.root = Path(tempfile.mkdtemp(prefix="explorer-downloads-", dir=self.under))
            # the server's folder goes with it (when this store is collected, or at the interpreter's exit)
            weakref.finalize(self, shutil.rmtree, self.root, True)
        return self.root
