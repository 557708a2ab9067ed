"""Importing a problem file and building its model and inputs. Runs user code: call only in
the evaluator's worker or when tracing a reference the user owns."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any


def import_file(path: str | Path, prefix: str = "kbot_problem") -> ModuleType:
    """Imports a Python file under a fresh module name (so two files never collide)."""
    path = Path(path).resolve()
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # A problem may import modules that sit next to it (an extracted target's package).
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        if sys.path and sys.path[0] == str(path.parent):
            sys.path.pop(0)
    return module


def case_inputs(module: ModuleType, case: dict[str, Any]) -> list[Any]:
    """Calls get_inputs(**case) (or get_inputs() for a file without CASES) and returns a list."""
    inputs = module.get_inputs(**case) if case else module.get_inputs()
    return list(inputs)


def init_inputs(module: ModuleType) -> list[Any]:
    return list(module.get_init_inputs())
