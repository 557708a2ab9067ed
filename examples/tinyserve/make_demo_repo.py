"""Copies tinyserve into a fresh git repository with one commit on `main`.

tinyserve lives inside kbot's own repository, but publishing a pull request needs a repository
of its own to branch from. This script (or `make_demo_repo()` from Python) makes one:

    python examples/tinyserve/make_demo_repo.py /tmp/tinyserve-demo

The copy leaves out caches and kbot's work directory, and this script itself.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE_ROOT = Path(__file__).resolve().parent
_LEFT_OUT = shutil.ignore_patterns(
    "__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache", ".kbot", "*.egg-info", ".git"
)
# Fixed identity and date, so the demo commit does not depend on the user's git config.
_AUTHOR = {
    "GIT_AUTHOR_NAME": "tinyserve demo",
    "GIT_AUTHOR_EMAIL": "tinyserve-demo@example.invalid",
    "GIT_COMMITTER_NAME": "tinyserve demo",
    "GIT_COMMITTER_EMAIL": "tinyserve-demo@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
}


class DemoRepoError(Exception):
    """The destination cannot take the demo repository; the message says why."""


def make_demo_repo(dest: Path, source: Path = EXAMPLE_ROOT, branch: str = "main") -> Path:
    """Copies `source` to `dest` (which must not exist or be empty), `git init`s and commits it."""
    dest = Path(dest).resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise DemoRepoError(f"{dest} already exists and is not an empty folder; pick a new path")
    if shutil.which("git") is None:
        raise DemoRepoError("git is not installed or not on PATH")
    if dest.exists():
        dest.rmdir()
    shutil.copytree(source, dest, ignore=_LEFT_OUT)
    (dest / Path(__file__).name).unlink(missing_ok=True)
    _git(dest, "init", "-q")
    # `git init -b` needs git 2.28; pointing HEAD at the branch works on every version.
    _git(dest, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
    _git(dest, "add", "--all")
    _git(dest, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "Initial commit of tinyserve")
    return dest


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, **_AUTHOR}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise DemoRepoError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="folder to create (must not exist or be empty)")
    parser.add_argument("--branch", default="main", help="name of the first branch (main)")
    args = parser.parse_args(argv)
    try:
        path = make_demo_repo(args.dest, branch=args.branch)
    except DemoRepoError as exc:
        print(f"make_demo_repo: error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
