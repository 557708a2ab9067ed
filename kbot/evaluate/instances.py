"""How a candidate's process builds the ModelNew the judge calls (kbot.evaluate.host_session):
built twice between two decoys, and no tensor of its state shared with anything outside it."""

from __future__ import annotations

from typing import Any

import torch

from kbot.evaluate.aliasing import held_outside
from kbot.evaluate.decoy_init import decoy_arguments
from kbot.evaluate.object_tables import StateTypeError
from kbot.evaluate.processes import short
from kbot.evaluate.state_check import first_change, snapshot
from kbot.problem.runtime import build_on


class Refused(Exception):
    """A request the candidate's process refuses: `rule` is the verdict's rule."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


def shared_state(
    model: torch.nn.Module, module: Any, persistent: frozenset[str]
) -> tuple[str, str] | None:
    """A tensor of ModelNew's also held outside it (kbot.evaluate.aliasing.held_outside)."""
    try:
        return held_outside(model, module, persistent)
    except StateTypeError as exc:
        raise Refused("model-new", str(exc)) from None


def build_judged(device: torch.device, model_new: type, init: list, module: Any) -> torch.nn.Module:
    """ModelNew built twice between two decoys built from other values
    (kbot.evaluate.decoy_init), the second judged: a model of many layers builds one per
    layer, and building one may not change what the next is built from (red-team round
    twelve: a count of instances kept in the module left every layer after the first
    wrong). A decoy before catches a module cache the first construction fills for all
    (keyed without one value), one after a cache each construction overwrites and every
    instance reads at its call."""
    decoy = decoy_arguments(model_new, init)

    def build_decoy() -> None:
        if decoy is not None:
            try:
                build_on(device, lambda: model_new(*decoy[0], **decoy[1]))
            except Exception:  # values this constructor refuses: no decoy
                pass

    try:
        build_decoy()
        first = build_on(device, lambda: model_new(*init))
        del first
        once = snapshot(None, module, identity=False)  # an equal dict rebuilt is alike
        model = build_on(device, lambda: model_new(*init))
    except StateTypeError as exc:
        raise Refused("model-new", str(exc)) from None
    except BaseException as exc:
        raise Refused("load", f"ModelNew(*get_init_inputs()) raised {short(exc)}") from None
    changed = first_change(once, None, module, identity=False)
    if changed is not None:
        raise Refused(
            "model-new",
            f"`{changed}` changed when a second ModelNew was built: each instance is built "
            "alike (a model of many layers builds one per layer), so a constructor may not "
            "count or record its instances",
        )
    try:
        build_decoy()
    except StateTypeError as exc:
        raise Refused("model-new", str(exc)) from None
    except BaseException as exc:  # what `except Exception` let through (SystemExit)
        raise Refused("load", f"ModelNew(...) raised {short(exc)}") from None
    return model
