"""The target repository's PR template is followed (issue 14, deliverable 4): its headings,
order, guidance comments and checklist stay; kbot's sections go under the heading that asks for
them, and what no heading asks for goes under "Details", so nothing is dropped."""

from __future__ import annotations

from pathlib import Path

from kbot.publish.pr_template import find_template, follow_template

GOLDEN = Path(__file__).parent / "golden"

# A serving engine's template, written for this test in the common shape.
TEMPLATE = """<!-- Thank you for your contribution! Please fill in every section. -->

## Motivation

<!-- Why is this change needed? Link the issue. -->
Describe the problem here.

## Modifications

<!-- What did you change?
     List the files and the design. -->

## Accuracy Tests

## Benchmarking and Profiling

## Checklist

- [ ] Format your code with the repository's pre-commit hooks.
- [ ] Add unit tests.
"""


def _kbot_body() -> str:
    """A PR body kbot renders (the golden file starts with the PR's title and a blank line)."""
    text = (GOLDEN / "fused_op_timed.pr_body.md.expected").read_text(encoding="utf-8")
    return text.split("\n", 2)[2]


def test_kbot_sections_go_under_the_headings_that_ask_for_them():
    body = _kbot_body()
    followed = follow_template(TEMPLATE, body)
    headings = [line for line in followed.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Motivation",
        "## Modifications",
        "## Accuracy Tests",
        "## Benchmarking and Profiling",
        "## Checklist",
    ]  # every section of this body has a heading that asks for it: no "Details"
    sections = {h: followed.split(h, 1)[1].split("\n## ", 1)[0] for h in headings}
    assert "**Why this op:**" in sections["## Motivation"]
    assert "Describe the problem here." not in followed  # a placeholder kbot answered
    assert "<!-- Why is this change needed? Link the issue. -->" in sections["## Motivation"]
    assert "     List the files and the design. -->" in sections["## Modifications"]
    assert "### Files" in sections["## Modifications"]
    assert "### Correctness evidence" in sections["## Accuracy Tests"]
    assert "### Performance" in sections["## Benchmarking and Profiling"]
    assert "### How to reproduce" in sections["## Benchmarking and Profiling"]
    # The checklist is the maintainer's to tick: kept as written.
    assert (
        "- [ ] Format your code with the repository's pre-commit hooks." in sections["## Checklist"]
    )
    # Nothing kbot wrote is lost: every line of its body is somewhere in the result, its
    # level-2 title as bold text under the template's headings.
    title = body.splitlines()[0]
    assert title.startswith("## ") and f"**{title[3:]}**" in followed
    for line in body.splitlines()[1:]:
        assert line in followed.splitlines(), line


def test_the_template_is_read_where_github_reads_it(tmp_path):
    assert find_template(tmp_path) is None
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "pull_request_template.md").write_text("## Why\n")
    assert find_template(tmp_path) == ("docs/pull_request_template.md", "## Why\n")
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "PULL_REQUEST_TEMPLATE.md").write_text("## Summary\n")
    assert find_template(tmp_path)[0] == ".github/PULL_REQUEST_TEMPLATE.md"
    (tmp_path / ".github" / "PULL_REQUEST_TEMPLATE.md").write_text("  \n")
    assert find_template(tmp_path)[0] == "docs/pull_request_template.md"  # an empty one is not


def test_a_template_that_asks_for_nothing_kbot_has_keeps_everything_under_details():
    followed = follow_template("## Notes for reviewers\n\nAnything else?\n", _kbot_body())
    assert followed.startswith("## Notes for reviewers\n\nAnything else?\n")
    assert "\n## Details\n" in followed and "### Performance" in followed


def test_a_heading_is_answered_by_its_most_specific_ask():
    template = "## Description of the change\n\n## How has this been tested?\n"
    followed = follow_template(template, _kbot_body())
    tested = followed.split("## How has this been tested?", 1)[1].split("\n## Details", 1)[0]
    described = followed.split("## How has this been tested?", 1)[0]
    assert "### Correctness evidence" in tested and "### Files" not in tested
    assert "**Why this op:**" in described
