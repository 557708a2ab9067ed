"""The modes a judged call of the candidate's forward runs under: an autograd mode the judge
picks per trial (GRAD_MODES) and, where the reference cannot tell them apart, train mode
(`in_mode`; kbot.evaluate.module_modes decides when), and with its parameters frozen or not
(`frozen`). Built on torch's C switches, taken when this module is imported, before any
candidate code runs."""

from __future__ import annotations

import contextlib

import torch

# torch's C switches, taken when this module is imported, before any candidate code: the
# Python context managers (`torch.no_grad`, ...) are classes a candidate could patch.
_SET_GRAD_ENABLED = torch._C._set_grad_enabled
_IS_GRAD_ENABLED = torch._C.is_grad_enabled
_INFERENCE_MODE = torch._C._InferenceMode
_TRAIN = torch.nn.Module.train  # so is this, a method of a class a candidate could patch
_PARAMETERS = torch.nn.Module.parameters
_REQUIRES_GRAD = torch._C.TensorBase.requires_grad_


@contextlib.contextmanager
def _grad_enabled(enabled: bool):
    before = _IS_GRAD_ENABLED()
    _SET_GRAD_ENABLED(enabled)
    try:
        yield
    finally:
        _SET_GRAD_ENABLED(before)


@contextlib.contextmanager
def in_mode(model: torch.nn.Module, train: bool):
    """ModelNew in train mode for this call when asked, back in eval mode after it (before
    its state is compared). nn.Module's own `train` runs: a class of the candidate's that
    defines it was refused at load (state_check.audit_classes)."""
    if not train:
        yield
        return
    _TRAIN(model, True)
    try:
        yield
    finally:
        _TRAIN(model, False)


@contextlib.contextmanager
def frozen(model: torch.nn.Module, freeze: bool):
    """ModelNew's parameters with `requires_grad` off for this call when asked, as serving
    engines load weights (`Parameter(w, requires_grad=False)`), each set back after it: a forward
    that reads `requires_grad` (to route training calls through autograd, say) must be right
    both ways (red-team round fourteen's c09 took a wrong path for frozen weights)."""
    if not freeze:
        yield
        return
    parameters = [p for p in _PARAMETERS(model) if p.requires_grad]
    for parameter in parameters:
        _REQUIRES_GRAD(parameter, False)
    try:
        yield
    finally:
        for parameter in parameters:
            _REQUIRES_GRAD(parameter, True)


@contextlib.contextmanager
def _inference_mode():
    guard = _INFERENCE_MODE(True)
    guard.__enter__()
    try:
        yield
    finally:
        guard.__exit__(None, None, None)


# The autograd modes a correctness call runs forward under (the judge picks one per trial):
# callers run ops under each (serving engines under inference_mode, training code with grad
# enabled), so a forward that tells them apart must be right under all three.
GRAD_MODES = {
    "no_grad": lambda: _grad_enabled(False),
    "enable_grad": lambda: _grad_enabled(True),
    "inference_mode": _inference_mode,
}
