"""Reading problem files without running them: KernelBench files as they are, CASES, KBOT."""

from __future__ import annotations

import pytest

from kbot.errors import ProblemError
from kbot.problem import load_problem
from kbot.problem.runtime import case_inputs, import_file, init_inputs

KERNELBENCH = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.softmax(x, dim=self.dim)

batch_size = 16
def get_inputs():
    return [torch.randn(batch_size, 128)]

def get_init_inputs():
    return [1]
"""

WITH_CASES = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        return x * self.weight

CASES = [dict(T=1), {"T": 16}]
KBOT = dict(atol=1e-3, extern_ops=["matmul"], name="scale")

def get_inputs(T):
    return [torch.randn(T, 8)]

def get_init_inputs():
    return [8]
"""


def test_kernelbench_file_has_one_empty_case(tmp_path):
    path = tmp_path / "softmax.py"
    path.write_text(KERNELBENCH)
    spec = load_problem(path)
    assert spec.cases == ({},) and not spec.has_cases
    assert spec.forward_params == ("x",) and spec.init_params == ("dim",)
    assert spec.name == "softmax" and len(spec.source_sha256) == 64
    module = import_file(path)
    assert [t.shape[0] for t in case_inputs(module, {})] == [16]
    assert init_inputs(module) == [1]


def test_cases_and_options_are_read_as_literals(tmp_path):
    path = tmp_path / "p.py"
    path.write_text(WITH_CASES)
    spec = load_problem(path)
    assert spec.cases == ({"T": 1}, {"T": 16}) and spec.has_cases
    assert spec.options.atol == 1e-3 and spec.options.extern_ops == ("matmul",)
    assert spec.name == "scale"
    module = import_file(path)
    assert case_inputs(module, {"T": 16})[0].shape == (16, 8)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def broken(:\n", ":1: syntax error"),
        ("import torch\n", "missing Model, get_inputs, get_init_inputs"),
        (
            "Model = 1\ndef get_inputs(): pass\ndef get_init_inputs(): pass\n",
            "`Model` must be a class",
        ),
        (
            WITH_CASES.replace('CASES = [dict(T=1), {"T": 16}]', "CASES = make_cases()"),
            "CASES uses `make_cases`, which is not a plain value of this file",
        ),
        (
            WITH_CASES.replace('CASES = [dict(T=1), {"T": 16}]', "CASES = [get_inputs(T=1)]"),
            "CASES uses `get_inputs`, which is not a plain value of this file",
        ),
        (
            WITH_CASES.replace(
                'CASES = [dict(T=1), {"T": 16}]', "CASES = [dict(dtype=torch.float16)]"
            ),
            "CASES uses `torch`, which is not a plain value of this file",
        ),
        (
            WITH_CASES.replace('CASES = [dict(T=1), {"T": 16}]', "CASES = dict(T=1)"),
            "non-empty list of dicts",
        ),
        (
            WITH_CASES.replace('CASES = [dict(T=1), {"T": 16}]', "CASES = [t for t in (1, 2)]"),
            "non-empty list of dicts",
        ),
        (
            WITH_CASES.replace(
                'CASES = [dict(T=1), {"T": 16}]', "CASES = [dict(T=range(t)) for t in (1, 2)]"
            ),
            "CASES[0]['T'] is a range; case values must be numbers",
        ),
        (
            WITH_CASES.replace('CASES = [dict(T=1), {"T": 16}]', "CASES = [dict(T=1 // 0)]"),
            "CASES could not be evaluated (ZeroDivisionError",
        ),
        (
            WITH_CASES.replace('CASES = [dict(T=1), {"T": 16}]', "CASES = [().__class__]"),
            "it reads `.__class__`",
        ),
        (
            WITH_CASES.replace(
                'CASES = [dict(T=1), {"T": 16}]', "CASES = [dict(T=t) for t in CASES]"
            ),
            "CASES uses `CASES`",
        ),
        (
            WITH_CASES.replace('CASES = [dict(T=1), {"T": 16}]', "CASES = []"),
            "non-empty list of dicts",
        ),
        (
            WITH_CASES.replace('extern_ops=["matmul"]', 'extern_ops=["softmax"]'),
            "extern_ops ['softmax'] not allowed",
        ),
        (WITH_CASES.replace("atol=1e-3", "atoll=1e-3"), "unknown KBOT key 'atoll'"),
    ],
)
def test_unusable_problem_files_say_what_to_fix(tmp_path, source, expected):
    path = tmp_path / "bad.py"
    path.write_text(source)
    with pytest.raises(ProblemError, match=expected.replace("[", r"\[").replace("(", r"\(")):
        load_problem(path)


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(ProblemError, match="does not exist"):
        load_problem(tmp_path / "nope.py")
    path = tmp_path / "bin.py"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ProblemError, match="not UTF-8"):
        load_problem(path)


@pytest.mark.parametrize(
    ("cases", "expected"),
    [
        ("[dict(T=t) for t in (1, 64, 8192)]", ({"T": 1}, {"T": 64}, {"T": 8192})),
        ("[{'T': 2**i} for i in range(3)]", ({"T": 1}, {"T": 2}, {"T": 4})),
        (
            "[dict(T=t, H=h) for t, h in zip(SIZES, (8, 16))]",
            ({"T": 1, "H": 8}, {"T": 64, "H": 16}),
        ),
        ("[dict(T=t) for t in SIZES] + [dict(T=LONG)]", ({"T": 1}, {"T": 64}, {"T": 4096})),
        ("[dict(shape=(t, 8)) for t in SIZES]", ({"shape": (1, 8)}, {"shape": (64, 8)})),
    ],
)
def test_cases_may_be_an_expression_over_plain_values(tmp_path, cases, expected):
    path = tmp_path / "p.py"
    source = WITH_CASES.replace('CASES = [dict(T=1), {"T": 16}]', "CASES = " + cases)
    path.write_text(
        source.replace(
            "import torch.nn as nn\n", "import torch.nn as nn\n\nSIZES = (1, 64)\nLONG = 4 * 1024\n"
        )
    )
    spec = load_problem(path)
    assert spec.cases == expected and spec.has_cases


def test_kbot_options_may_be_an_expression(tmp_path):
    path = tmp_path / "p.py"
    source = WITH_CASES.replace("KBOT = dict(", "TOL = 1e-3\nKBOT = dict(rtol=TOL * 2, ")
    path.write_text(source.replace("atol=1e-3", "atol=TOL"))
    spec = load_problem(path)
    assert spec.options.atol == 1e-3 and spec.options.rtol == 2e-3
