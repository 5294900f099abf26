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


@pytest.fixture(autouse=True, scope="session")
def _patient_localhost_check():
    """Gradio's launch asks its own server for a HEAD within 3 s and otherwise refuses to start ("When localhost is
    not accessible, a shareable link must be created"); on a loaded 2-core machine (load 11, 2026-11-29) a test's
    app failed so. The same question, with the hang guard's patience."""
    import httpx
    from gradio import networking

    from tests.hang import HANG_MS

    def url_ok(url: str) -> bool:
        try:
            return httpx.head(url, timeout=HANG_MS / 1000, verify=False).status_code in (200, 401, 301, 302, 303, 307,
                                                                                         308)
        except (ConnectionError, httpx.ConnectError, httpx.TimeoutException):
            return False

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(networking, "url_ok", url_ok)
        yield


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


@pytest.fixture(scope="session")
def browser(chromium_path, chromium_args):
    """One headless Chromium for the whole session (Playwright's sync API); each test opens its own context (cookies,
    storage, viewport and permissions of its own: `tests.app.browser.opened` / `new_page`) and closes it. Launching a
    browser per test cost about a second each. One per worker of pytest-xdist (each is a session)."""
    from playwright.sync_api import sync_playwright

    from tests.hang import HANG_MS
    from tests.hang_report import watch_browser

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=chromium_path, args=chromium_args, timeout=HANG_MS)
        watch_browser(chromium)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.hookimpl(trylast=True)  # after pytest's own ordering (by fixture parameters)
def pytest_collection_modifyitems(config, items):
    """Longest first, so that pytest-xdist's two workers (`-n 2`, pyproject.toml), which take the next test whenever
    they finish one, end together: the tests marked `long` (30 s to 150 s each on a loaded machine), then the other
    browser tests (5-25 s), then the rest (mostly under a second), each part in its collected order. Each worker is
    a pytest session of its own: one Chromium and one set of served apps per worker, started by its first browser
    test. A browser test gets one rerun (the flaky mark): a failed try's cause is in the summary."""
    def rank(item) -> int:
        return 0 if item.get_closest_marker("long") else 1 if _uses_browser(item) else 2

    items.sort(key=rank)  # stable: the collected order within each part
    for item in items:
        if _uses_browser(item) and not item.get_closest_marker("flaky"):
            item.add_marker(pytest.mark.flaky(reruns=1))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A test marked `event_loop` (it calls asyncio.run or starts its own Playwright) runs in a thread of its own:
    Playwright's sync API, once started in a process, holds an event loop as the main thread's running loop, which
    asyncio.run and a second sync_playwright refuse; a fresh thread has none. So such a test may run on any worker,
    before or after the browser tests."""
    if pyfuncitem.get_closest_marker("event_loop") is None:
        return None
    import threading

    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    failed: list[BaseException] = []

    def call() -> None:
        try:
            pyfuncitem.obj(**args)
        except BaseException as error:  # an assertion, a skip or an error: raised again in the main thread
            failed.append(error)

    thread = threading.Thread(target=call, name=f"event_loop {pyfuncitem.name}")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return True


def _uses_browser(item) -> bool:
    return "browser" in getattr(item, "fixturenames", ())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that failed on a hang guard (a Playwright or pytest-timeout timeout, a wait's assertion) gets the served
    apps' queues and every thread's stack in its report (tests/hang_report.py): a hang seen once in CI can be read.
    A browser test's teardown report carries how often the page's stream watchdog clicked during it."""
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and call.excinfo is not None and "Timeout" in call.excinfo.typename + str(call.excinfo.value)[:200]:
        from tests.hang_report import report

        rep.sections.append(("hang report", report()))
    if call.when == "teardown" and _uses_browser(item):
        from tests.hang_report import WATCHDOG_FIRED

        rep.user_properties.append((WATCHDOG_PROPERTY, WATCHDOG_FIRED.count(item.nodeid)))
        WATCHDOG_FIRED[:] = [t for t in WATCHDOG_FIRED if t != item.nodeid]  # a rerun counts afresh


WATCHDOG_PROPERTY = "stream_watchdog_fired"


def pytest_terminal_summary(terminalreporter):
    """How often the page's queue-stream watchdog had to reopen a page's stream (explorer.app.page.stream_watchdog:
    Gradio's race, docs/tests.md), summed over the browser tests' reports: the same line with or without xdist's
    workers (a report, unlike a module's list, travels from a worker to the controller)."""
    counts = [(rep.nodeid, value) for reports in terminalreporter.stats.values() for rep in reports
              for name, value in getattr(rep, "user_properties", ()) if name == WATCHDOG_PROPERTY]
    fired: dict[str, int] = {}
    for nodeid, value in counts:
        if value:
            fired[nodeid] = fired.get(nodeid, 0) + value
    if counts:  # a browser test ran
        terminalreporter.write_line(f"stream watchdog: fired {sum(fired.values())} times, in {len(fired)} tests "
                                    f"{sorted(fired)}")
    for rep in terminalreporter.stats.get("rerun", []):  # a try that failed and passed again: why it failed
        hang = dict(getattr(rep, "sections", ())).get("hang report")
        terminalreporter.write_line(f"rerun {rep.nodeid}: {str(rep.longrepr).splitlines()[-1][:200]}")
        said = getattr(getattr(rep.longrepr, "reprcrash", None), "message", "")
        if said:
            terminalreporter.write_line(f"  said: {' '.join(said.split())[:400]}")
        for where in _test_lines(rep):
            terminalreporter.write_line(f"  waited at {where}")
        if hang:  # the queues, the pages and their trails; not the threads' stacks
            terminalreporter.write_line("\n".join(hang.split("\n--- thread")[0].splitlines()[:250]))


def _test_lines(rep) -> list[str]:
    """Where in the tests a failed try was: each traceback entry under tests/ as `path:line: source`."""
    entries = getattr(getattr(rep.longrepr, "reprtraceback", None), "reprentries", ())
    out = []
    for entry in entries:
        loc = getattr(entry, "reprfileloc", None)
        if loc is not None and "tests/" in loc.path:
            source = next((line[1:].strip() for line in getattr(entry, "lines", ()) if line.startswith(">")), "")
            out.append(f"{loc.path}:{loc.lineno}: {source[:120]}")
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def free_port() -> Callable[[], int]:
    """A function giving a free TCP port on 127.0.0.1."""
    return _free_port
