"""Constants that tracing computes from the model's float attributes (`-self.limit`,
`1 / self.temperature`) are written as those attributes in the kernel, so an instance built with
other values computes with its own; a constant codegen cannot tie to an attribute is refused,
never baked in."""

from pathlib import Path

import pytest
import torch

from kbot.problem import load_problem
from kbot.problem.runtime import import_file
from kbot.propose.codegen import generate
from kbot.propose.codegen.trace import Unsupported, trace_problem

PROBLEMS = Path(__file__).parent / "problems"


def _kernel_module(tmp_path: Path, problem: Path):
    source = generate(load_problem(problem))[0].source
    path = tmp_path / f"{problem.stem}_kernel.py"
    path.write_text(source, encoding="utf-8")
    return source, import_file(path)


def test_a_negated_attribute_follows_the_instance(tmp_path):
    problem = PROBLEMS / "clamp_negated_attribute.py"
    source, kernel = _kernel_module(tmp_path, problem)
    assert "(-limit)" in source and "-3.0" not in source
    module = import_file(problem)
    x = torch.randn(4, 96) * 4
    for limit, scale in ((3.0, 0.5), (1.25, 2.0)):  # the second is not the traced instance
        want = module.Model(limit, scale)(x)
        got = kernel.ModelNew(limit, scale)(x)
        torch.testing.assert_close(got, want)


def _problem(tmp_path: Path, forward: str, init: str = "self.limit = 3.0") -> Path:
    path = tmp_path / "attr_problem.py"
    path.write_text(
        "import math\nimport torch\nimport torch.nn as nn\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        f"        {init}\n\n"
        f"    def forward(self, x):\n        return {forward}\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 64)]\n\n\n"
        "def get_init_inputs():\n    return []\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    "forward, why",
    [
        ("x * math.sqrt(self.limit)", "computed from the model's float attributes"),
        ("x.clamp(min=3.0, max=self.limit)", "another constant of the same operation"),
    ],
)
def test_a_constant_it_cannot_tie_to_an_attribute_is_refused(tmp_path, forward, why):
    with pytest.raises(Unsupported, match=why):
        trace_problem(load_problem(_problem(tmp_path, forward)))


def test_reciprocal_and_plain_attributes_are_written_as_the_attribute(tmp_path):
    path = _problem(tmp_path, "x * (1.0 / self.limit) + self.limit")
    source = generate(load_problem(path))[0].source
    assert "(1.0 / limit)" in source and "3.0" not in source.split("class ModelNew")[0]


def test_a_literal_equal_to_an_attribute_in_another_operation_stays_a_literal(tmp_path):
    # GELU's decomposition multiplies by 0.5 and the model scales by its own 0.5: each constant
    # is told apart by the operation that holds it.
    path = _problem(tmp_path, "torch.nn.functional.gelu(x * self.limit)", init="self.limit = 0.5")
    source, kernel = _kernel_module(tmp_path, path)
    assert "* limit" in source and "0.5" in source.split("class ModelNew")[0]
    module = import_file(path)
    x = torch.randn(4, 64)
    model = module.Model()
    ours = kernel.ModelNew()
    for limit in (0.5, 2.0):
        model.limit = ours.limit = limit
        torch.testing.assert_close(ours(x), model(x))


def test_a_submodules_float_attribute_follows_the_instance(tmp_path):
    path = _problem(
        tmp_path, "self.act(x) * 2.0", init="self.act = nn.LeakyReLU(negative_slope=0.2)"
    )
    source, kernel = _kernel_module(tmp_path, path)
    assert "self.act.negative_slope" in source, source
    module = import_file(path)
    x = torch.randn(4, 64)
    model, ours = module.Model(), kernel.ModelNew()
    for slope in (0.2, 0.05):
        model.act.negative_slope = ours.act.negative_slope = slope
        torch.testing.assert_close(ours(x), model(x))


def test_an_attribute_that_changes_the_graph_stays_specialised(tmp_path):
    # A norm's p = 2.0 decomposes to a sum of squares; moved, to another graph: it is not moved,
    # the kernel keeps p = 2 as the traced instance has it, and the other attribute still follows.
    path = _problem(
        tmp_path,
        "x / (torch.linalg.vector_norm(x, ord=self.p, dim=-1, keepdim=True) + self.limit)",
        init="self.p = 2.0\n        self.limit = 0.25",
    )
    traced = trace_problem(load_problem(path))
    follows = {f.attr for f in traced.attr_constants.by_value.values()}
    assert follows == {"limit"}


def test_a_float_passed_to_forward_is_read_at_every_call(tmp_path):
    # `forward(x, scale)` with scale a declared number: the kernel takes the value it is
    # called with (here clamp(-scale, scale) and a division), not the one traced.
    path = tmp_path / "scaled_clamp.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x, scale):\n"
        "        return torch.clamp(x, min=-scale, max=scale) / scale + x * 0.25\n\n\n"
        "CASES = [dict(T=2, scale=0.5), dict(T=8, scale=3.0)]\n"
        "KBOT = dict(scalar_inputs=['scale'])\n\n\n"
        "def get_inputs(T=2, scale=0.5):\n    return [torch.randn(T, 64) * 4, scale]\n\n\n"
        "def get_init_inputs():\n    return []\n",
        encoding="utf-8",
    )
    source, kernel = _kernel_module(tmp_path, path)
    body = source.split("class ModelNew")[0]
    assert "(-scale)" in body and "0.5" not in body and "3.0" not in body
    module = import_file(path)
    x = torch.randn(8, 64) * 4
    for scale in (0.5, 3.0, 1.7):
        torch.testing.assert_close(kernel.ModelNew()(x, scale), module.Model()(x, scale))


def test_a_float_argument_that_changes_the_path_stays_as_traced(tmp_path):
    # `if scale > 1` takes another path when the value moves: codegen keeps the traced value
    # (the publish guard then pins the argument to it).
    path = tmp_path / "branchy.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x, scale):\n"
        "        return x * 2.0 if scale > 0.6 else x * 3.0\n\n\n"
        "KBOT = dict(scalar_inputs=['scale'])\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 64), 0.5]\n\n\n"
        "def get_init_inputs():\n    return []\n",
        encoding="utf-8",
    )
    source, kernel = _kernel_module(tmp_path, path)
    x = torch.randn(4, 64)
    torch.testing.assert_close(kernel.ModelNew()(x, 0.5), x * 3.0)


def test_an_attribute_a_float32_decomposition_rounds_is_still_the_attribute(tmp_path):
    # DeepSeek-V3's RMSNorm is `F.rms_norm(x, (dim,), weight, self.eps)` on bf16 activations
    # with a float32 weight: the decomposition computes in float32 and its eps reaches the graph as 9.99999974738e-06, which matched no
    # form of eps = 1e-5, so codegen refused the problem. It is eps, rounded as the kernel's
    # float32 argument rounds it; another instance's eps still follows.
    path = tmp_path / "rms_norm_functional.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, eps):\n        super().__init__()\n"
        "        self.eps = eps\n        self.weight = nn.Parameter(torch.rand(64) + 0.5)\n\n"
        "    def forward(self, x):\n"
        "        return F.rms_norm(x, (64,), self.weight, self.eps)\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 64, dtype=torch.bfloat16) * 1e-3]\n\n\n"
        "def get_init_inputs():\n    return [1e-5]\n",
        encoding="utf-8",
    )
    source, kernel = _kernel_module(tmp_path, path)
    assert "9.99999974" not in source and "1e-05" not in source.split("class ModelNew")[0]
    module = import_file(path)
    x = torch.randn(4, 64, dtype=torch.bfloat16) * 1e-3  # small enough that eps matters
    for eps in (1e-5, 1e-3):  # the second is not the traced instance
        reference, candidate = module.Model(eps), kernel.ModelNew(eps)
        candidate.load_state_dict(reference.state_dict())
        torch.testing.assert_close(candidate(x), reference(x))
