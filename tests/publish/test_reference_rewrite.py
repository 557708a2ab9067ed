"""How the PR's parity test and benchmark carry the reference: imports in isort order, and the
shape sweep's sizes as keywords of the input builders (kbot.publish.reference)."""


def test_the_prs_imports_are_in_isort_order():
    """The parity test and the benchmark merge kbot's imports with the reference's: written in
    the order ruff's `I` rules and isort's default profile want, so no import check flags them."""
    from kbot.publish.reference import import_sections

    lines = [
        "import torch",
        "import argparse",
        "from torch import nn",
        "import types",
        "from demo.layers.triton_norm import rmsnorm",
        "from demo.layers.norm import RMSNorm",
        "import triton",
        "import torch",
    ]
    assert import_sections(lines, "demo") == [
        ["import argparse", "import types"],
        ["import torch", "import triton", "from torch import nn"],
        ["from demo.layers.norm import RMSNorm", "from demo.layers.triton_norm import rmsnorm"],
    ]


def test_swept_sizes_become_keywords_of_the_input_builders_only():
    from kbot.publish.reference import parametrize_sizes

    body = (
        "WIDTH = 256\nHEADS = 64\n\n\nclass Model:\n    heads = HEADS\n\n\n"
        "def get_inputs(T=1):\n    # one row per token\n    return [torch.randn(T, WIDTH), HEADS]\n\n\n"
        "def get_init_inputs():\n    return [256, 1e-06]\n"
    )
    sized = parametrize_sizes(body, [256, 64])
    assert "def get_inputs(T=1, dim_256=256):" in sized.body
    assert "torch.randn(T, dim_256), HEADS]" in sized.body  # HEADS is Model's too: left alone
    assert "def get_init_inputs(dim_256=256):\n    return [dim_256, 1e-06]" in sized.body
    assert sized.body.startswith("WIDTH = 256\nHEADS = 64\n\n\nclass Model:")  # text kept
    assert (sized.inputs_keys, sized.init_keys) == (("dim_256",), ("dim_256",))


def test_annotations_naming_what_the_file_never_imports_are_dropped():
    """A problem file postpones its annotations and the scan copies no import for them; the PR's
    files evaluate them (lightllm's `-> Tuple[...]` raised NameError in a drafted parity test)."""
    from kbot.publish.reference import split_reference

    source = '''"""problem"""
from __future__ import annotations

import torch
from torch import nn


def rope(q: torch.Tensor, k: Tensor, *rest: Extra, n: Optional[int] = None,
         **kw: Any) -> Tuple[torch.Tensor, torch.Tensor]:
    return q * 2, k


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: "Tensor") -> torch.Tensor:
        return rope(q, k)[0]
'''
    reference = split_reference(source, "demo")
    assert reference.imports == ("from torch import nn",)
    body = reference.body
    assert "def rope(q: torch.Tensor, k, *rest, n=None,\n         **kw):" in body
    assert 'def forward(self, q: torch.Tensor, k: "Tensor") -> torch.Tensor:' in body
    namespace = {"torch": __import__("torch"), "nn": __import__("torch").nn}
    exec(compile(body, "parity", "exec"), namespace)  # defined without a NameError
    import torch

    assert namespace["Model"]()(torch.ones(2), torch.ones(2)).tolist() == [2.0, 2.0]


def test_annotations_the_file_can_evaluate_are_kept():
    from kbot.publish.reference import split_reference

    source = """from __future__ import annotations

from typing import Optional, Tuple

import torch


def f(x: torch.Tensor, n: Optional[int] = None) -> Tuple[torch.Tensor, int]:
    return x, 0
"""
    reference = split_reference(source, "demo")
    assert "from typing import Optional, Tuple" in reference.imports
    assert "def f(x: torch.Tensor, n: Optional[int] = None) -> Tuple[torch.Tensor, int]:" in (
        reference.body
    )
