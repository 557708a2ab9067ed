"""Errors a person can act on, and the exit codes the CLI maps them to."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    REJECTED = 1  # a candidate was rejected, or a scan found nothing
    BAD_INPUT = 2  # the input itself is unusable: usage, config, missing file
    INTERRUPTED = 130  # Ctrl-C (SIGINT), as a shell reports it: 128 + 2


class KbotError(Exception):
    """Base of all errors kbot reports as one line; `exit_code` says how the CLI ends."""

    exit_code = ExitCode.BAD_INPUT


class UsageError(KbotError):
    """A command line that cannot be run (unknown flag, missing path)."""


class ConfigError(KbotError):
    """A `.kbot.yml` or `KBOT_*` value that is missing, unknown or of the wrong type."""


class ProblemError(KbotError):
    """A problem file that cannot be used (syntax error, no `Model`, bad `CASES`)."""


class CandidateError(KbotError):
    """A candidate file that cannot be read at all (missing, not UTF-8)."""


class Interrupted(KbotError):
    """Ctrl-C stopped the command; the message says how to resume it. What was written stays."""

    exit_code = ExitCode.INTERRUPTED


class ToolError(KbotError):
    """A tool kbot drives (git, GitHub, an LLM endpoint) refused; the message says what to fix."""
