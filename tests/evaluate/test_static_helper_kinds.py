"""Values and calls of the candidate's own making are followed, not taken for tensors: a
`tl.constexpr` constant's or an Enum member's `.value` and a str constant's methods are Python
values (Liger's `casting_mode in (_CASTING_MODE_LLAMA.value, ...)`), a helper class's
@staticmethod / @classmethod is walked like a module function (`Launcher.run(x)`), and a
@dataclass, typing.NamedTuple or plain class may be built in forward, its fields of the kinds
they were built with. Each honest form is accepted; the cheat beside it is still refused."""

from kbot.evaluate.static import check_source
from kbot.problem.spec import ProblemOptions

HEADER = """\
import dataclasses
import enum
import typing

import torch
import torch.nn as nn
import triton
import triton.language as tl

_LLAMA: tl.constexpr = tl.constexpr(0)
_GEMMA: tl.constexpr = tl.constexpr(1)
_NAME = "llama"
_MODES = {"llama": _LLAMA.value, "gemma": _GEMMA.value}


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def launch(x, block=1024):
    out = torch.empty_like(x)
    _copy[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block)
    return out

"""


def rules(body: str) -> list[str]:
    return [f"{r.rule}: {r.message}" for r in check_source(HEADER + body, ProblemOptions())]


def model(forward_body: str) -> str:
    lines = "\n".join("        " + line for line in forward_body.strip().splitlines())
    return f"\nclass ModelNew(nn.Module):\n    def forward(self, x):\n{lines}\n"


def refused(found: list[str], text: str) -> bool:
    return any(text in r and r.startswith("torch-compute-in-forward") for r in found)


# ---- constant values ------------------------------------------------------------------------
def test_a_constexpr_value_in_a_container_is_a_number():
    assert rules(model("mode = {'llama': _LLAMA.value}['llama']\nreturn launch(x, 1024 if mode == 0 else 512)")) == []  # fmt: skip
    assert rules(model("return launch(x, 1024 if 0 in (_LLAMA.value, _GEMMA.value) else 512)")) == []  # fmt: skip
    assert rules(model("return launch(x, 1024 if _MODES['llama'] == 0 else 512)")) == []


def test_an_enum_value_and_a_str_method_in_a_container_are_python_values():
    enum_class = "class Mode(enum.Enum):\n    LLAMA = 0\n    GEMMA = 1\n"
    assert rules(enum_class + model("return launch(x, 1024 if 0 in (Mode.LLAMA.value, Mode.GEMMA.value) else 512)")) == []  # fmt: skip
    assert rules(model("return launch(x, 1024 if 'llama' in (_NAME.lower(), 'x') else 512)")) == []  # fmt: skip


def test_a_tensor_in_a_container_or_under_a_constants_name_is_still_a_tensor():
    found = rules(model("return launch(x, 1024 if 0 in (x.value, 1) else 512)"))
    assert refused(found, "compares tensors"), found
    found = rules(model("_LLAMA = x\nreturn launch(x, 1024 if (_LLAMA.value,)[0] == 0 else 512)"))
    assert refused(found, "compares tensors"), found
    found = rules(model("return launch(x, 1024 if 'a' in (_NAME.format(x),) else 512)"))
    assert refused(found, "compares tensors"), found


def test_an_enum_with_methods_gives_no_python_values():
    enum_class = "class Mode(enum.Enum):\n    LLAMA = 0\n\n    def run(self, x):\n        return torch.relu(x)\n"
    found = rules(enum_class + model("return launch(Mode.LLAMA.run(x))"))
    assert refused(found, "Mode.LLAMA.run(...)"), found


# ---- static and class methods of a helper class -------------------------------------------
LAUNCHER = """
class Launcher:
    BLOCK = 1024

    @staticmethod
    def grid(n):
        return (triton.cdiv(n, Launcher.BLOCK),)

    @classmethod
    def run(cls, x):
        out = torch.empty_like(x)
        _copy[cls.grid(x.numel())](x, out, x.numel(), BLOCK=cls.BLOCK)
        return out

    @staticmethod
    def view(x):
        return {body}
"""


def test_a_static_or_class_method_launcher_is_followed():
    assert rules(LAUNCHER.format(body="launch(x)") + model("return Launcher.run(x)")) == []
    assert rules(LAUNCHER.format(body="launch(x)") + model("return Launcher.view(x)")) == []


def test_torch_compute_in_a_static_method_is_refused():
    found = rules(LAUNCHER.format(body="torch.relu(x)") + model("return launch(Launcher.view(x))"))
    assert refused(found, "`torch.relu` is PyTorch compute"), found


def test_a_method_name_of_the_files_classes_is_not_taken_for_a_tensor_method():
    # `obj.view(x)` where kbot cannot tell obj from a tensor runs Launcher.view's body
    found = rules(
        LAUNCHER.format(body="torch.relu(x)")
        + model("obj = (Launcher, 1)[0]\nreturn launch(obj.view(x))")  # fmt: skip
    )
    assert refused(found, "obj.view(...)"), found


# ---- building the candidate's classes in forward ------------------------------------------
CLASSES = """
@dataclasses.dataclass
class LaunchConfig:
    BLOCK: int
    num_warps: int = 4

    def grid(self, n):
        return (triton.cdiv(n, self.BLOCK),)


class Settings(typing.NamedTuple):
    BLOCK: int


class Plain:
    def __init__(self, block):
        self.block = block
"""


def test_a_dataclass_namedtuple_or_plain_class_may_be_built_in_forward():
    uses = [
        "cfg = LaunchConfig(BLOCK=1024)\nreturn launch(x, cfg.BLOCK if cfg.BLOCK == 1024 else 512)",
        "cfg = LaunchConfig(1024)\nout = torch.empty_like(x)\n"
        "_copy[cfg.grid(x.numel())](x, out, x.numel(), BLOCK=cfg.BLOCK, num_warps=cfg.num_warps)\n"
        "return out",
        "cfg = Settings(BLOCK=1024)\nreturn launch(x, (cfg.BLOCK, 1)[0])",
        "return launch(x, Plain(1024).block)",
    ]
    for use in uses:
        assert rules(CLASSES + model(use)) == [], use


def test_a_field_built_from_a_tensor_or_assigned_a_tensor_is_a_tensor():
    found = rules(CLASSES + model("cfg = LaunchConfig(BLOCK=x)\nreturn launch(x, cfg.BLOCK * 2)"))
    assert refused(found, "cfg.BLOCK * 2"), found
    found = rules(
        CLASSES + model("cfg = Settings(BLOCK=1)\ncfg.BLOCK = x\nreturn launch(x, cfg.BLOCK * 2)")
    )
    assert refused(found, "cfg.BLOCK * 2"), found


def test_torch_compute_run_by_building_a_class_is_refused():
    init = "class Bad:\n    def __init__(self, x):\n        self.y = torch.relu(x)\n"
    found = rules(init + model("Bad(x)\nreturn launch(x)"))
    assert refused(found, "`torch.relu` is PyTorch compute"), found
    factory = (
        "def _make():\n    return torch.relu(torch.ones(4))\n\n\n@dataclasses.dataclass\n"
        "class Bad:\n    t: torch.Tensor = dataclasses.field(default_factory=_make)\n"
    )
    found = rules(factory + model("Bad()\nreturn launch(x)"))
    assert refused(found, "`torch.relu` is PyTorch compute"), found
    method = CLASSES.replace("return (triton.cdiv(n, self.BLOCK),)", "return torch.relu(n)")
    found = rules(method + model("cfg = LaunchConfig(1024)\nreturn launch(cfg.grid(x))"))
    assert refused(found, "`torch.relu` is PyTorch compute"), found
