"""README's CLI reference documents exactly the commands and arguments the real parser has.

The section is hand-written in a fixed shape, one `### kbot <command>` heading per command and
one bullet per argument whose backticked names come first:

    ### kbot config
    - `path`: ...
    - `--config FILE`: ...

When a command or flag is added, removed or renamed, this test names what README must change.
"""

from __future__ import annotations

import argparse
import re

from kbot.cli import build_parser

_SECTION = "## CLI reference"
_BULLET_NAMES = re.compile(r"^- ((?:`[^`]+`(?:, )?)+)")


def _parser_reference(
    parser: argparse.ArgumentParser, heading: str = "kbot"
) -> dict[str, set[str]]:
    """Heading -> argument names, for the parser and, recursively, its subcommands."""
    reference: dict[str, set[str]] = {heading: set()}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                reference.update(_parser_reference(subparser, f"{heading} {name}"))
        elif action.option_strings:
            reference[heading].update(action.option_strings)
        else:
            reference[heading].add(action.metavar or action.dest)
    return reference


def _readme_reference(readme: str) -> dict[str, set[str]]:
    assert _SECTION in readme, f"README.md has no '{_SECTION}' section"
    section = readme.split(_SECTION, 1)[1]
    section = re.split(r"^## ", section, flags=re.MULTILINE)[0]
    reference: dict[str, set[str]] = {}
    heading = None
    for line in section.splitlines():
        if line.startswith("### "):
            heading = line[4:].strip()
            assert heading not in reference, f"README documents `{heading}` twice"
            reference[heading] = set()
        elif heading and (match := _BULLET_NAMES.match(line)):
            for name in re.findall(r"`([^`]+)`", match.group(1)):
                reference[heading].add(name.split()[0])
    return reference


def test_readme_documents_every_command_and_no_other(readme_text: str) -> None:
    parser_commands = set(_parser_reference(build_parser()))
    readme_commands = set(_readme_reference(readme_text))
    missing = sorted(parser_commands - readme_commands)
    stale = sorted(readme_commands - parser_commands)
    assert not missing, f"README's CLI reference lacks a '### ' heading for: {missing}"
    assert not stale, f"README's CLI reference documents commands the parser lacks: {stale}"


def test_readme_documents_every_argument_and_no_other(readme_text: str) -> None:
    parser_reference = _parser_reference(build_parser())
    readme_reference = _readme_reference(readme_text)
    problems = []
    for heading, arguments in parser_reference.items():
        documented = readme_reference.get(heading, set())
        if missing := sorted(arguments - documented):
            problems.append(f"`{heading}` lacks bullets for {missing}")
        if stale := sorted(documented - arguments):
            problems.append(f"`{heading}` documents arguments the parser lacks: {stale}")
    assert not problems, "README's CLI reference is out of date: " + "; ".join(problems)


def test_reader_sees_the_shape_it_expects() -> None:
    # Guards the reader itself, so a silently empty parse cannot make the tests above pass.
    text = "\n".join(
        [
            "## CLI reference",
            "### kbot",
            "- `--version`: version.",
            "### kbot demo",
            "    kbot demo PATH",
            "- `path`: where.",
            "- `-n`, `--dry-run`: only say.",
            "- `--config FILE`: which file.",
            "## Next section",
            "### kbot ignored",
        ]
    )
    assert _readme_reference(text) == {
        "kbot": {"--version"},
        "kbot demo": {"path", "-n", "--dry-run", "--config"},
    }


def test_parser_reference_includes_the_global_flags() -> None:
    reference = _parser_reference(build_parser())
    assert {"--version", "--debug"} <= reference["kbot"]
    assert all("--json" in names for heading, names in reference.items() if heading != "kbot")
