"""Commit subjects of at most 72 characters, merges included, from the first commit after BASE on (issue 39): the
history checked here, and the versioned commit-msg hook (scripts/hooks/commit-msg) that refuses a longer one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOOK = ROOT / "scripts" / "hooks" / "commit-msg"
BASE = "e45361c81c06eb01c42bd91419a5da72c864a9f2"  # the last commit before the rule (e45361c)
MAX_SUBJECT = 72


def git(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, encoding="utf-8")


def subjects_since_base() -> list[str]:
    """`git log --format=%s BASE..HEAD` (merges included), or a skip saying why the history is not there."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if git("rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        pytest.skip("not a git checkout (an exported tree): no history to check")
    if git("cat-file", "-e", f"{BASE}^{{commit}}").returncode != 0:
        shallow = git("rev-parse", "--is-shallow-repository").stdout.strip() == "true"
        pytest.skip(f"the history does not reach {BASE[:7]} ({'a shallow clone' if shallow else 'another history'})")
    if git("merge-base", "--is-ancestor", BASE, "HEAD").returncode != 0:
        pytest.skip(f"HEAD does not descend from {BASE[:7]}")
    log = git("log", "--format=%s", f"{BASE}..HEAD")
    assert log.returncode == 0, log.stderr
    return log.stdout.splitlines()


def test_every_subject_since_the_rule_is_at_most_72_characters():
    long = [f"{len(s)}: {s}" for s in subjects_since_base() if len(s) > MAX_SUBJECT]
    assert long == [], "subjects over 72 characters (reword them before merging):\n" + "\n".join(long)


def hook(tmp_path: Path, message: str) -> subprocess.CompletedProcess:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message, encoding="utf-8")
    return subprocess.run([sys.executable, str(HOOK), str(path)], capture_output=True, text=True)


def test_the_hook_reads_the_subject_as_git_log_does(tmp_path):
    """The subject is the first paragraph, lines joined, without git's comment lines or what follows the scissors."""
    assert hook(tmp_path, "x" * 72 + "\n\n" + "a long body line " * 20 + "\n").returncode == 0
    refused = hook(tmp_path, "é" * 73 + "\n")  # characters, not bytes
    assert refused.returncode == 1 and "73 characters; at most 72" in refused.stderr
    assert hook(tmp_path, "Merge branch 'feature'\n\n# Please enter a commit message" + "." * 80 + "\n").returncode == 0
    assert hook(tmp_path, "\n\nFix it\n# a comment line of git's template, longer than " + "x" * 72).returncode == 0
    assert hook(tmp_path, "A subject of forty characters, wrapped o\nver a second line of forty characters!!\n"
                ).returncode == 1  # git log shows the two lines as one subject of 80
    assert hook(tmp_path, "Fix it\n# ------------------------ >8 ------------------------\n" + "y" * 99).returncode == 0


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_runs_the_hook_on_commits_and_merges(tmp_path):
    """Installed as docs/architecture.md says (core.hooksPath), git refuses a long subject on a commit and on a merge,
    and takes `git merge`'s default subject."""
    if not os.access(HOOK, os.X_OK):
        pytest.skip("the hook lost its executable bit (an exported tree)")
    repo = tmp_path / "repo"
    repo.mkdir()
    env_config = ["-c", f"core.hooksPath={HOOK.parent}", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                  "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return git(*env_config, *args, cwd=repo)

    assert run("init", "-q").returncode == 0
    assert run("commit", "-q", "--allow-empty", "-m", "Start").returncode == 0
    long = run("commit", "-q", "--allow-empty", "-m", "x" * 73)
    assert long.returncode != 0 and "at most 72" in long.stderr
    assert run("checkout", "-q", "-b", "feature").returncode == 0
    assert run("commit", "-q", "--allow-empty", "-m", "On the feature").returncode == 0
    assert run("checkout", "-q", "main").returncode == 0
    assert run("commit", "-q", "--allow-empty", "-m", "On main").returncode == 0
    long_merge = run("merge", "-q", "--no-ff", "-m", "Merge " + "y" * 70, "feature")
    assert long_merge.returncode != 0 and "at most 72" in long_merge.stderr
    assert run("merge", "--abort").returncode == 0
    assert run("merge", "-q", "--no-ff", "--no-edit", "feature").returncode == 0
    assert git("log", "-1", "--format=%s", cwd=repo).stdout.strip() == "Merge branch 'feature'"
