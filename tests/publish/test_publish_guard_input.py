"""The dispatch guard admits only inputs like those the evaluator checked: the first floating
input's dtype (RoPE takes int64 positions first), every tensor present and contiguous, other
floats in the same dtype, integer tensors in their checked dtype, and every dimension that had
one size in all cases at that size; dimensions that varied up to the largest size checked."""

import pytest

from kbot.publish.adapters.base import guard_terms
from kbot.publish.adapters.source import Param
from kbot.publish.callsite import KernelCall
from kbot.publish.guard import GuardError, anchor_index, input_facts

ROPE_PROBLEM = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, positions, query):
        return query * positions[:, None]


CASES = [dict(T=2), dict(T=8)]


def get_inputs(T=2):
    return [torch.randint(0, 8, (T,)), torch.randn(T, 16, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
"""

NORM_PROBLEM = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x, weight, bias, residual):
        return x


CASES = [dict(T=1), dict(T=16)]


def get_inputs(T=1):
    x = torch.randn(T, 64, dtype=torch.bfloat16)
    w = torch.randn(64, dtype=torch.bfloat16)
    return [x, w, torch.randn(64, dtype=torch.bfloat16), torch.randn(T, 64, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
"""


def _facts(tmp_path, source):
    path = tmp_path / "problem.py"
    path.write_text(source)
    from kbot.problem import load_problem

    return input_facts(path, load_problem(path).cases)


def test_the_first_floating_input_anchors_the_guard(tmp_path):
    facts = _facts(tmp_path, ROPE_PROBLEM)
    assert anchor_index(facts) == 1
    call = KernelCall("rope", ("positions", "query"), ("positions", "query"), (), ())
    target = (Param("positions", None), Param("query", None))
    terms = guard_terms(call, target, ("bfloat16",), True, "rope", facts)
    assert terms == [
        "query.is_cuda",
        "query.dtype in (torch.bfloat16,)",
        "positions.dtype == torch.int64",
        "positions.is_contiguous()",
        "positions.data_ptr() % 16 == 0",
        "positions.dim() == 1",
        "positions.shape[0] <= 8",  # the most tokens a case checked
        "query.is_contiguous()",
        "query.data_ptr() % 16 == 0",
        "query.shape[1:] == (16,)",
        "query.shape[0] <= 8",
        "not (torch.is_grad_enabled() and query.requires_grad)",  # training keeps the original
        "torch.get_default_dtype() == torch.float32",  # the default the judge ran under
    ]


def test_optional_tensors_must_be_present_and_checked_dims_pinned(tmp_path):
    facts = _facts(tmp_path, NORM_PROBLEM)
    names = ("x", "weight", "bias", "residual")
    call = KernelCall("layer_norm", names, names, (), ())
    target = (
        Param("x", None),
        Param("weight", "None"),
        Param("bias", "None"),
        Param("residual", "None"),
    )
    terms = guard_terms(call, target, ("bfloat16",), False, "ln", facts)
    assert terms == [
        "x.dtype in (torch.bfloat16,)",
        "x.is_contiguous()",
        "x.data_ptr() % 16 == 0",
        "x.shape[1:] == (64,)",
        "x.shape[0] <= 16",
        "weight is not None",
        "weight.dtype == x.dtype",
        "weight.is_contiguous()",
        "weight.data_ptr() % 16 == 0",
        "weight.shape == (64,)",
        "bias is not None",
        "bias.dtype == x.dtype",
        "bias.is_contiguous()",
        "bias.data_ptr() % 16 == 0",
        "bias.shape == (64,)",
        "residual is not None",
        "residual.dtype == x.dtype",
        "residual.is_contiguous()",
        "residual.data_ptr() % 16 == 0",
        "residual.shape == x.shape",
        "not (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad "
        "or bias.requires_grad or residual.requires_grad))",
        "torch.get_default_dtype() == torch.float32",
    ]


def test_a_problem_that_cannot_build_its_inputs_stops_the_publication(tmp_path):
    """No silent dtype-and-contiguity guard: without the checked inputs the kernel would run on
    sizes nobody checked, so publishing stops and says why."""
    failing = NORM_PROBLEM.replace(
        "def get_inputs(T=1):", "def get_inputs(T=1):\n    raise RuntimeError('no weights here')"
    )
    with pytest.raises(
        GuardError,
        match=r"building the inputs on the meta device raised "
        r"RuntimeError: no weights here; publish from the repository's checkout",
    ):
        _facts(tmp_path, failing)
    missing = tmp_path / "elsewhere"
    missing.mkdir()
    (missing / "problem.py").write_text("from not_a_package_here import Op\n" + NORM_PROBLEM)
    with pytest.raises(GuardError, match="importing problem.py raised ModuleNotFoundError"):
        input_facts(missing / "problem.py", ({"T": 1},))


ATTR_PROBLEM = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, head_size=128, eps=1e-6, approximate="tanh"):
        super().__init__()
        self.head_size = head_size
        self.eps = eps
        self.approximate = approximate
        self.weight = nn.Parameter(torch.ones(head_size))

    def forward(self, x):
        return x


CASES = [dict(T=1)]


def get_inputs(T=1):
    return [torch.randn(T, 128)]


def get_init_inputs():
    return [64, 1e-5]
"""

REFERENCE = """
def forward(self, x):
    q = x.view(x.shape[0], -1, self.head_size)
    if self.training:
        pass
    return gelu(q, approximate=self.approximate) * torch.rsqrt(q.pow(2).mean(-1) + self.eps)
"""


def test_scalar_attributes_the_kernel_has_built_in_are_pinned(tmp_path):
    import ast

    from kbot.publish.module_facts import attribute_terms, scalar_attributes

    path = tmp_path / "problem.py"
    path.write_text(ATTR_PROBLEM)
    scalars = scalar_attributes(path)
    assert dict(scalars) == {"head_size": 64, "eps": 1e-5, "approximate": "tanh"}
    function = ast.parse(REFERENCE).body[0]
    # eps is an argument of the kernel call; head_size and the mode are built into the kernel
    assert attribute_terms(function, scalars, ("eps",)) == [
        "self.head_size == 64",
        "self.approximate == 'tanh'",
    ]
    assert attribute_terms(None, scalars, ()) == []  # a plain function has no attributes
    # A flag the kernel takes still picks one code path of those the judge could run: pinned
    # (red-team round fourteen's c07); a number it takes (eps) stays free.
    assert attribute_terms(function, scalars, ("eps", "approximate")) == [
        "self.head_size == 64",
        "self.approximate == 'tanh'",
    ]


OWNER = """
class Rotary:
    def forward(self, positions, query):
        return self._rotate(query, self.cos_sin_cache[positions])

    def _rotate(self, x, cs):
        return x.view(x.shape[0], -1, self.head_size)[..., : self.rotary_dim] * cs
"""


def test_attributes_read_in_helper_methods_the_forward_calls_are_pinned():
    import ast

    from kbot.publish.module_facts import attribute_terms

    cls = ast.parse(OWNER).body[0]
    forward = cls.body[0]
    scalars = (("head_size", 128), ("rotary_dim", 64), ("base", 10000.0))
    assert attribute_terms(forward, scalars, (), cls) == [
        "self.head_size == 128",
        "self.rotary_dim == 64",
    ]


def test_an_optional_first_input_is_checked_for_presence_first(tmp_path):
    facts = _facts(tmp_path, NORM_PROBLEM)
    names = ("x", "weight", "bias", "residual")
    call = KernelCall("layer_norm", names, names, (), ())
    target = (Param("x", "None"), Param("weight", None), Param("bias", None), Param("r", None))
    terms = guard_terms(call, target, ("bfloat16",), True, "ln", facts)
    assert terms[:3] == ["x is not None", "x.is_cuda", "x.dtype in (torch.bfloat16,)"]
    assert terms.count("x is not None") == 1


NUMBERS_PROBLEM = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x, scale, seqlen, approximate, mode):
        return x[:seqlen] * scale


CASES = [dict(T=1), dict(T=16)]
KBOT = dict(scalar_inputs=["scale", "seqlen", "approximate", "mode"])


def get_inputs(T=1):
    return [torch.randn(T, 64), 0.125, T, None, "tanh"]


def get_init_inputs():
    return []
"""


def test_a_number_checked_at_one_value_is_pinned_and_one_checked_at_several_is_free(tmp_path):
    # A float passed to forward with one value in every case may be built into the kernel
    # (codegen traces it as a constant): another value must take the original path. The token
    # count passed at 1 and 16 is read by the kernel (one with it built in fails a case), up to
    # the largest count checked, as a dimension the cases varied is.
    facts = _facts(tmp_path, NUMBERS_PROBLEM)
    names = ("x", "scale", "seqlen", "approximate", "mode")
    call = KernelCall("op", names, names, (), ())
    target = tuple(Param(n, None) for n in names)
    terms = guard_terms(call, target, ("float32",), True, "op", facts)
    assert "scale == 0.125" in terms
    assert "approximate is None" in terms
    assert "mode == 'tanh'" in terms
    assert [t for t in terms if t.startswith("seqlen")] == ["seqlen <= 16"]
    assert "x.shape[1:] == (64,)" in terms


def test_number_terms_for_several_strings_and_non_finite_floats():
    from kbot.publish.guard import InputFact, _number_terms

    strings = InputFact(False, False, "", (), (), ("tanh", "none"))
    assert _number_terms("mode", strings) == ["mode in ('tanh', 'none')"]
    infinite = InputFact(False, False, "", (), (), (float("inf"),))
    assert _number_terms("cap", infinite) == ["cap == float('inf')"]
    # an object the guard cannot write (a config namespace): no term, as before
    assert _number_terms("cfg", InputFact(False, False, "", (), (), None)) == []


OPTIONAL_NONE_PROBLEM = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x, residual):
        return x if residual is None else x + residual


CASES = [dict(T=1), dict(T=16)]


def get_inputs(T=1):
    return [torch.randn(T, 64), None]


def get_init_inputs():
    return []
"""


def test_an_optional_tensor_passed_as_none_in_every_case_keeps_to_none(tmp_path):
    # The kernel was checked without a residual: a call with one takes the original path.
    facts = _facts(tmp_path, OPTIONAL_NONE_PROBLEM)
    call = KernelCall("op", ("x", "residual"), ("x", "residual"), (), ())
    target = (Param("x", None), Param("residual", "None"))
    terms = guard_terms(call, target, ("float32",), True, "op", facts)
    assert "residual is None" in terms


WEIGHTED_PROBLEM = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(16))
        self.register_buffer("scale", torch.ones(16))
        self.register_buffer("index", torch.arange(16))
        self.eps = 1e-6

    def forward(self, x):
        return x * self.weight * self.scale


CASES = [dict(T=1)]


def get_inputs(T=1):
    return [torch.randn(T, 16)]


def get_init_inputs():
    return []
"""


def test_the_weights_the_kernel_reads_join_the_autograd_term(tmp_path):
    """Red-team round fourteen's c12: a kernel with no gradient through its weight ran where a
    weight was being trained, since the term asked only forward's arguments."""
    from kbot.publish.module_facts import float_tensor_attributes

    path = tmp_path / "problem.py"
    path.write_text(WEIGHTED_PROBLEM)
    tensors = float_tensor_attributes(path)
    assert tensors == (("weight", "float32"), ("scale", "float32"))  # not the integer buffer
    call = KernelCall("norm", ("x",), ("x", "self.weight", "self.eps"), (), ("weight", "eps"))
    target = (Param("x", None),)
    terms = guard_terms(
        call,
        target,
        ("float32",),
        False,
        "here",
        _facts(tmp_path, WEIGHTED_PROBLEM),
        tensors=tensors,
    )
    assert (
        "not (torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad))" in terms
    )
    # red-team round fourteen's c02: a weight cast to 16 bits never met the kernel in the judge
    assert "self.weight.dtype == torch.float32" in terms
    assert not any("self.scale" in term for term in terms)  # a tensor the kernel does not read
    plain = guard_terms(
        call, target, ("float32",), False, "here", _facts(tmp_path, WEIGHTED_PROBLEM)
    )
    assert "not (torch.is_grad_enabled() and x.requires_grad)" in plain


TABLE_PROBLEM = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x, table):
        return x * table.repeat(1, 2).to(x.dtype)


CASES = [dict(T=1), dict(T=4)]


def get_inputs(T):
    return [torch.randn(T, 16, dtype=torch.bfloat16), torch.randn(T, 8, dtype=torch.float32)]


def get_init_inputs():
    return []
"""


def test_an_fp32_table_beside_bf16_activations_keeps_its_own_dtype(tmp_path):
    """A rotary table is float32 beside bf16 activations in every case: `table.dtype ==
    x.dtype` would never hold and the kernel would never run (lingua's freqs_cis)."""
    facts = _facts(tmp_path, TABLE_PROBLEM)
    call = KernelCall("op", ("x", "table"), ("x", "table"), (), ())
    target = (Param("x", None), Param("table", None))
    terms = guard_terms(call, target, ("bfloat16",), True, "op", facts)
    assert "table.dtype == torch.float32" in terms
    assert not any(t.startswith("table.dtype == x") for t in terms)


def test_a_functions_number_fixed_by_the_problem_is_pinned_and_passed_by_name():
    from kbot.publish.adapters.guarded import _function_call, _pinned_term

    params = (Param("xq", None), Param("xk", None), Param("seq_dim", None), Param("freqs", None))
    call = _function_call("rope", params, {"seq_dim": 1}, 3)
    assert call == "rope(xq=inputs[0], xk=inputs[1], seq_dim=1, freqs=inputs[2])"
    assert _function_call("rope", params, {}, 4) == "rope(*inputs)"
    assert _pinned_term("seq_dim", 1) == "seq_dim == 1"
    assert _pinned_term("interleaved", True) == "interleaved is True"


def test_a_defaulted_number_the_problem_fixed_elsewhere_is_guarded_at_the_checked_value(tmp_path):
    """`rms_norm(x, weight, eps=1e-6)` extracted with the model config's eps 1e-5: the kernel
    has 1e-5 built in, so the guard pins 1e-05 (it pinned the default before), and the parity
    test calls the original with eps=1e-05 by name."""
    from kbot.publish.adapters.base import AdapterInput
    from kbot.publish.adapters.guarded import GUARDED_DISPATCH

    (tmp_path / "ops.py").write_text(
        "import torch\n\n\ndef rms_norm(x, weight, eps=1e-6):\n"
        "    v = x.float().pow(2).mean(-1, keepdim=True)\n"
        "    return (x.float() * torch.rsqrt(v + eps)).to(x.dtype) * weight\n"
    )
    spec = AdapterInput(
        repo_root=tmp_path,
        target_path="ops.py",
        qualname="rms_norm",
        entry="",
        call=KernelCall("rms_norm", ("x", "weight"), ("x", "weight"), (), ()),
        kernel_import="triton_rms_norm",
        kernel_path="triton_rms_norm.py",
        dtypes=("bfloat16",),
        scalars=(("eps", 1e-05),),
    )
    integration = GUARDED_DISPATCH.integrate(spec)
    assert "eps == 1e-05" in integration.guard and "1e-06" not in integration.guard
    assert integration.entry.call == "rms_norm(x=inputs[0], weight=inputs[1], eps=1e-05)"


LENGTH_PROBLEM = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", torch.rand(8))

    def forward(self, seqlen):
        return torch.outer(torch.arange(seqlen, dtype=torch.float32), self.inv_freq)


CASES = [dict(T=1), dict(T=16)]
KBOT = dict(scalar_inputs=["seqlen"])


def get_inputs(T=1):
    return [T]


def get_init_inputs():
    return []
"""


def test_a_forward_of_numbers_only_is_placed_by_the_tensor_the_kernel_reads(tmp_path):
    # torchtitan's VisionRotaryEmbedding2D.forward(seqlen) builds a frequency table from its
    # `inv_freq` buffer: the guard asked `seqlen.is_cuda` of an int (CPU dry run, 2026-12-07:
    # "AttributeError: 'int' object has no attribute 'is_cuda'" in the PR's parity test).
    from kbot.errors import KbotError
    from kbot.publish.module_facts import float_tensor_attributes

    path = tmp_path / "problem.py"
    path.write_text(LENGTH_PROBLEM)
    tensors = float_tensor_attributes(path)
    call = KernelCall("table", ("seqlen",), ("seqlen", "self.inv_freq"), (), ("inv_freq",))
    target = (Param("seqlen", None),)
    facts = _facts(tmp_path, LENGTH_PROBLEM)
    terms = guard_terms(call, target, ("float32",), True, "t", facts, tensors=tensors)
    assert terms == [
        "self.inv_freq.is_cuda",
        "seqlen <= 16",  # a count the cases varied: up to the largest checked, as a dim is
        "self.inv_freq.dtype == torch.float32",
        "not (torch.is_grad_enabled() and self.inv_freq.requires_grad)",
        "torch.get_default_dtype() == torch.float32",
    ]
    with pytest.raises(KbotError, match="t: the kernel takes no tensor to guard on"):
        guard_terms(call, target, ("float32",), True, "t", facts)  # nor reads one of its own
