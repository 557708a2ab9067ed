"""README opens with the two set-up commands, in the shape `.ci/run` reads them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

# Two workers (pytest-xdist, in the test extras): serially the suite took most of CI's 90 minutes.
_TEST_COMMAND = "python -m pytest -q -n 2 --dist worksteal"


def _command_lines(readme: str) -> list[str]:
    return [line[len("    $ ") :] for line in readme.splitlines() if line.startswith("    $ ")]


def test_readme_opens_with_the_install_and_test_commands(readme_text: str) -> None:
    first, second = _command_lines(readme_text)[:2]
    assert first.startswith('pip install torch==2.13.0 && pip install -e ".[test]" && kbot ')
    assert "examples/tinyserve" in first
    assert second == _TEST_COMMAND


def test_ci_script_extracts_the_readme_test_command(repo_root: Path) -> None:
    # The same sed expression .ci/run uses; if either side changes shape, this fails.
    ci_script = (repo_root / ".ci" / "run").read_text()
    match = re.search(r"sed -n '([^']+)' README.md", ci_script)
    assert match, ".ci/run no longer reads the test command from README.md with sed"
    extracted = subprocess.run(
        ["sed", "-n", match.group(1), "README.md"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert extracted[:1] == [_TEST_COMMAND]


def test_readme_links_point_at_files_that_exist(readme_text: str, repo_root: Path) -> None:
    links = re.findall(r"\]\(([^)#:]+)\)", readme_text)
    assert links, "README.md has no relative links to check"
    missing = [link for link in links if not (repo_root / link).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
