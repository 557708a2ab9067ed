"""The subcommands: a plain dict from name to module, built in one place.

Each module defines `HELP` (one line), `add_arguments(parser)` and `run(args) -> CommandResult`.
Modules are imported only when their command runs, so `kbot --help` stays fast.
"""

from __future__ import annotations

COMMANDS: dict[str, str] = {
    "scan": "kbot.commands.scan",
    "eval": "kbot.commands.eval",
    "optimize": "kbot.commands.optimize",
    "pr": "kbot.commands.pr",
    "publish": "kbot.commands.publish",
    "run": "kbot.commands.run",
    "config": "kbot.commands.config",
    "trajectories": "kbot.commands.trajectories",
    "action": "kbot.commands.action",
    "bench": "kbot.commands.bench",
}
