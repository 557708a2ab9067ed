"""The static rules over the whole candidate module: forbidden modules reached through any
attribute chain, computed attribute access, the triton API allowlist, code that runs during a
call outside forward's body (special methods, properties, decorators, hooks, context managers,
rebound kernels), tensors laundered through lambdas, local defs, comprehensions and starred
arguments, and what module level may run at import. Each hole has a small source rejected with
its rule; every honest candidate kbot has or generates still passes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kbot.evaluate.static import RULES, check_source, problem_dtype_hint
from kbot.problem import load_problem
from kbot.problem.spec import ProblemOptions

ROOT = Path(__file__).parents[2]
HERE = Path(__file__).parent

HEADER = """\
import functools
import math
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _op_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

"""

LAUNCH = """\
out = torch.empty_like(x)
_op_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
return out
"""


def source(
    launcher: str = "",
    extra: str = "",
    init: str = "",
    methods: str = "",
    forward: str = "return op(x, self.weight)",
    bases: str = "nn.Module",
) -> str:
    """A candidate in kbot's convention with pieces replaced: module-level `extra`, lines at
    the start of the launcher `op(x, weight)`, of `__init__`, extra methods of ModelNew."""
    body = textwrap.dedent(launcher) + LAUNCH
    launcher_def = "def op(x, weight):\n" + textwrap.indent(body, "    ")
    init_lines = "self.weight = nn.Parameter(torch.ones(hidden))\n" + textwrap.dedent(init)
    model = (
        f"class ModelNew({bases}):\n"
        "    def __init__(self, hidden):\n"
        "        super().__init__()\n"
        + textwrap.indent(init_lines, " " * 8)
        + "\n"
        + textwrap.indent(textwrap.dedent(methods), "    ")
        + f"\n    def forward(self, x):\n        {forward}\n"
    )
    return HEADER + textwrap.dedent(extra) + "\n\n" + launcher_def + "\n\n" + model


DEFAULTS = ProblemOptions()


def rules(text: str, options: ProblemOptions = DEFAULTS) -> set[str]:
    return {r.rule for r in check_source(text, options, None)}


def test_the_template_itself_passes():
    assert check_source(source(), ProblemOptions()) == ()


# ---- forbidden modules anywhere in a chain --------------------------------------------------
@pytest.mark.parametrize(
    "launcher,rule",
    [
        ("env = torch.os.environ\n", "io-access"),
        ("env = triton.runtime.jit.os.environ\n", "io-access"),
        ("env = triton.runtime.jit.knobs.os.environ\n", "io-access"),
        ("mods = torch.serialization.sys.modules\n", "io-access"),
        ("imp = triton.compiler.compiler.importlib\n", "dynamic-import"),
        ("t = triton.runtime.build.importlib.import_module('torch')\n", "dynamic-import"),
        ("r = triton.runtime.build.functools.reduce(operator.add, [1], 0)\n", "dynamic-import"),
        ("b = torch.nn.modules.module.builtins\n", "dynamic-import"),
        ("c = torch.cuda.ctypes\n", "dynamic-import"),
        ("s = torch.nn.modules.subprocess\n", "threads"),
        ("t = torch.random.threading\n", "module-patching"),
        ("t = torch.nn.threading\n", "threads"),
        ("s = torch.distributions.socket\n", "io-access"),
        ("i = torch.nn.functional.inspect\n", "introspection"),
        ("g = torch.nn.gc\n", "introspection"),
        ("o = torch.nn.functional.torch.overrides\n", "module-patching"),
        ("m = torch.nn.functional.handle_torch_function\n", "module-patching"),
        ("d = torch._dynamo\n", "torch-compile"),
        ("o = (lambda: torch)().os\n", "io-access"),
        ("o = [torch][0].sys\n", "io-access"),
        ("o = getattr(torch.serialization, 'sys')\n", "io-access"),
    ],
)
def test_forbidden_modules_are_rejected_anywhere_in_a_chain(launcher, rule):
    text = source(launcher)
    assert rule in rules(text), check_source(text, ProblemOptions())


@pytest.mark.parametrize(
    "extra,rule",
    [
        ("from triton.runtime.jit import os\n", "io-access"),
        ("from torch.serialization import sys\n", "io-access"),
        ("import triton.compiler\n", "triton-api"),
        ("from triton.runtime import driver\n", "triton-api"),
        ("from torch.nn.modules.module import register_module_forward_hook\n", "hooks"),
    ],
)
def test_imports_reaching_forbidden_modules_are_rejected(extra, rule):
    assert rule in rules(source(extra=extra))


@pytest.mark.parametrize(
    "launcher,rule",
    [
        ("w = torch.from_file('/etc/passwd', size=4)\n", "io-access"),
        ("w = torch.UntypedStorage.from_file('/etc/passwd', False, 4)\n", "io-access"),
        ("exp = operator.attrgetter('exp')(torch)\n", "dynamic-import"),
        ("call = operator.methodcaller('exp')\n", "dynamic-import"),
        ("name = 'exp'\nf = getattr(torch, name)\n", "dynamic-import"),
        ("name = 'exp'\nh = hasattr(torch, name)\n", "dynamic-import"),
        ("setattr(x, 'flag', 1)\n", "module-patching"),
        ("f = object.__getattribute__(torch, 'exp')\n", "introspection"),
        ("f = getattr(torch, '__dict__')\n", "introspection"),
        ("m = __import__('os')\n", "dynamic-import"),
        ("v = vars(torch)\n", "introspection"),
        ("g = globals()\n", "introspection"),
        ("d = dir(torch)\n", "introspection"),
        ("C = type('C', (), {})\n", "dynamic-import"),
        ("f = (i for i in ()).gi_frame.f_back\n", "introspection"),
        ("s = torch.initial_seed()\n", "introspection"),
        ("s = torch.cuda.get_rng_state()\n", "introspection"),
        ("torch.backends.cudnn.flags(enabled=False)\n", "module-patching"),
        ("e = torch.utils.collect_env.get_pretty_env_info()\n", "io-access"),
        ("n = '__exit__'\n", "introspection"),
        ("data = __loader__.get_data('/etc/passwd')\n", "introspection"),
        ("def _g(open):\n    return open\nf = _g(open)\n", "io-access"),
    ],
)
def test_file_access_computed_getattr_and_introspection_are_rejected(launcher, rule):
    text = source(launcher)
    assert rule in rules(text), check_source(text, ProblemOptions())


@pytest.mark.parametrize(
    "launcher,rule",
    [
        ("k = triton.compiler.compile\n", "triton-api"),
        ("t = triton.runtime.jit.JITFunction\n", "triton-api"),
        ("t = triton.knobs.runtime\n", "triton-api"),
        ("t = tl.core.tensor\n", "triton-api"),
        ("t = triton.cdiv(x, 2)\n", "torch-compute-in-forward"),
    ],
)
def test_only_the_triton_helpers_are_allowed_outside_kernels(launcher, rule):
    text = source(launcher)
    assert rule in rules(text), check_source(text, ProblemOptions())


def test_the_triton_helpers_and_dtypes_pass():
    launcher = (
        "props = triton.runtime.driver.active.utils.get_device_properties(x.device.index)\n"
        "block = triton.next_power_of_2(x.shape[-1])\n"
        "dtype = tl.float32\n"
    )
    assert check_source(source(launcher), ProblemOptions()) == ()


# ---- code that runs during a call, outside forward's body --------------------------------
@pytest.mark.parametrize(
    "methods,rule",
    [
        ("def __call__(self, x):\n    return self.forward(x) * 2\n", "special-methods"),
        ("def __getattr__(self, name):\n    return torch.exp\n", "special-methods"),
        ("def __getattribute__(self, name):\n    return 1\n", "special-methods"),
        ("def __setattr__(self, name, value):\n    pass\n", "special-methods"),
        ("def __del__(self):\n    pass\n", "special-methods"),
        ("def _call_impl(self, *args):\n    return 1\n", "model-new"),
        ("def load_state_dict(self, state, strict=True):\n    return None\n", "model-new"),
        (
            "@property\ndef scale(self):\n    return torch.exp(self.weight)\n",
            "torch-compute-in-forward",
        ),
        ("def __iter__(self):\n    return iter([self.weight.exp()])\n", "torch-compute-in-forward"),
        ("def __len__(self):\n    return int(self.weight.sum())\n", "torch-compute-in-forward"),
    ],
)
def test_special_methods_and_properties_of_model_new_are_judged(methods, rule):
    text = source(methods=methods)
    assert rule in rules(text), check_source(text, ProblemOptions())


def test_a_property_used_by_forward_is_followed():
    methods = "@property\ndef doubled(self):\n    return self.weight * 2\n"
    text = source(methods=methods, forward="return op(x, self.doubled)")
    assert "torch-compute-in-forward" in rules(text)


@pytest.mark.parametrize(
    "extra,launcher,rule",
    [
        (  # a helper class whose __getitem__ computes
            "class Table:\n    def __getitem__(self, t):\n        return torch.exp(t)\n",
            "",
            "torch-compute-in-forward",
        ),
        (  # a context manager: a try/except in disguise
            "class Guard:\n    def __enter__(self):\n        return self\n"
            "    def __exit__(self, *exc):\n        return True\n",
            "with Guard():\n    pass\n",
            "try-except-fallback",
        ),
        ("class D:\n    def __get__(self, obj, owner):\n        return 1\n", "", "special-methods"),
        ("class M(type):\n    pass\n\n\nclass C(metaclass=M):\n    pass\n", "", "special-methods"),
    ],
)
def test_classes_of_the_module_are_judged(extra, launcher, rule):
    text = source(launcher, extra=extra)
    assert rule in rules(text), check_source(text, ProblemOptions())


@pytest.mark.parametrize(
    "launcher",
    [
        "with contextlib_like:\n    pass\n",
        "with F.sdpa_kernel([]):\n    pass\n",
    ],
)
def test_with_blocks_other_than_no_grad_and_device_are_rejected(launcher):
    assert "try-except-fallback" in rules(source(launcher))


def test_allowed_context_managers_and_decorators_pass():
    launcher = "with torch.cuda.device(x.device), torch.no_grad():\n    pass\n"
    text = source(launcher).replace(
        "    def forward(self, x):", "    @torch.no_grad()\n    def forward(self, x):"
    )
    assert check_source(text, ProblemOptions()) == ()


@pytest.mark.parametrize(
    "text_change,rule",
    [
        (("    def forward(self, x):", "    @_wrap\n    def forward(self, x):"), "decorators"),
        (("    def forward(self, x):", "    @staticmethod\n    def forward(x):"), "decorators"),
        (("def op(x, weight):", "@functools.lru_cache\ndef op(x, weight):"), "decorators"),
        (("def op(x, weight):", "@_wrap\ndef op(x, weight):"), "decorators"),
        (("class ModelNew(", "@_wrap\nclass ModelNew("), "decorators"),
    ],
)
def test_decorators_outside_the_allowlist_are_rejected(text_change, rule):
    extra = "def _wrap(fn):\n    return fn\n"
    text = source(extra=extra).replace(*text_change)
    assert rule in rules(text), check_source(text, ProblemOptions())


@pytest.mark.parametrize(
    "init",
    [
        "self.register_forward_hook(lambda m, i, o: o * 2)\n",
        "self.register_forward_pre_hook(lambda m, i: i)\n",
        "self.register_full_backward_hook(lambda m, gi, go: gi)\n",
        "nn.modules.module.register_module_forward_hook(lambda m, i, o: o)\n",
        "self.weight.register_hook(lambda g: g)\n",
        "self._forward_hooks[0] = print\n",
        "torch.nn.utils.parametrize.register_parametrization(self, 'weight', nn.Identity())\n",
    ],
)
def test_hooks_are_rejected_wherever_they_are_registered(init):
    text = source(init=init)
    assert "hooks" in rules(text), check_source(text, ProblemOptions())


@pytest.mark.parametrize(
    "extra,launcher,init,rule",
    [
        (  # the kernel name rebound to a wrapper whose __getitem__ the launch then runs
            "class Wrapper:\n    def __init__(self, k):\n        self.k = k\n\n\n"
            "_op_kernel = Wrapper(_op_kernel)\n",
            "",
            "",
            "rebinding",
        ),
        ("", "global _op_kernel\n", "", "rebinding"),
        ("", "_op_kernel = None\n", "", "rebinding"),
        ("_op_kernel.run = print\n", "", "", "rebinding"),
        ("", "", "self.forward = print\n", "rebinding"),
        ("ModelNew = nn.Identity\n", "", "", "rebinding"),
        ("", "", "type(self).forward = print\n", "rebinding"),
    ],
)
def test_rebinding_a_kernel_or_a_method_is_rejected(extra, launcher, init, rule):
    text = source(launcher, extra=extra, init=init)
    if "ModelNew = " in extra:  # after the class, so it replaces it
        text = text.replace(extra, "") + "\n" + extra
    assert rule in rules(text), check_source(text, ProblemOptions())


def test_model_new_defined_twice_is_rejected():
    text = (
        source() + "\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
    )
    assert "rebinding" in rules(text)


def test_model_new_must_subclass_nn_module_directly():
    extra = "class Base(nn.Module):\n    pass\n"
    assert "model-new" in rules(source(extra=extra, bases="Base"))
    assert "model-new" in rules(source(bases="nn.Module, object"))


def test_a_module_class_other_than_model_new_called_as_a_submodule_is_rejected():
    extra = "class Block(nn.Module):\n    def forward(self, x):\n        return x * 2\n"
    text = source(extra=extra, init="self.block = Block()\n")
    text = text.replace("return op(x, self.weight)", "return op(self.block(x), self.weight)")
    assert "torch-compute-in-forward" in rules(text)


def test_a_parameter_named_like_the_kernel_is_rejected():
    text = source().replace("def op(x, weight):", "def op(x, weight, _op_kernel=None):")
    assert "rebinding" in rules(text)


# ---- tensors laundered into "numbers" -----------------------------------------------------
@pytest.mark.parametrize(
    "extra,launcher",
    [
        ("", "double = lambda t: t * 2\ny = double(x)\n"),
        ("", "def double(t):\n    return t * 2\ny = double(x)\n"),
        ("", "def expo(t):\n    return t.exp()\ny = expo(x)\n"),
        ("", "ys = [t for t in (x, weight)]\ny = ys[0] * 2\n"),
        ("", "ys = {i: t for i, t in enumerate([x])}\ny = ys[0] * 2\n"),
        ("", "ys = list(map(lambda t: t * 2, [x]))\n"),
        ("", "ys = sorted([x, weight])\n"),
        ("", "ys = list([x])\ny = ys[0] * 2\n"),
        ("def _second(a, b):\n    return b * 2\n", "y = _second(*[x, weight])\n"),
        ("def _second(a, b):\n    return b * 2\n", "y = _second(**{'a': x, 'b': weight})\n"),
        ("def _apply(f, v):\n    return f(v)\n", "y = _apply(lambda t: t * 2, x)\n"),
        ("def _double(t):\n    return t * 2\n", "y = list(map(_double, [x]))\n"),
        ("def _pair(t):\n    return (t, t)\n", "p = _pair(x)\ny = p[0] * 2\n"),
        ("", "y = operator.mul(x, weight)\n"),
        ("", "y = functools.reduce(operator.mul, [x, weight])\n"),
        ("", "s = f'{x[0]}'\n"),
        ("", "if x:\n    pass\n"),
        ("", "y = not x\n"),
        ("", "grid = lambda meta: (meta['x_ptr'].sum(),)\n"),
        ("", "later = lambda: z * 2\nz = x\ny = later()\n"),
        ("", "y = torch.tensor(x)\n"),
        ("", "y = torch.full((4,), x)\n"),
        ("", "match 1:\n    case 1:\n        y = torch.exp(x)\n"),
        ("_STATE = 0\n\n\ndef _keep(t):\n    global _STATE\n    _STATE = t\n", "y = _STATE * 2\n"),
    ],
)
def test_tensors_laundered_through_functions_and_containers_are_still_tensors(extra, launcher):
    text = source(launcher, extra=extra)
    assert "torch-compute-in-forward" in rules(text), check_source(text, ProblemOptions())


def test_a_method_passed_as_a_callback_is_followed():
    methods = "def _double(self, t):\n    return t * 2\n"
    text = source(
        methods=methods, forward="return op(list(map(self._double, [x]))[0], self.weight)"
    )
    assert "torch-compute-in-forward" in rules(text)


def test_heuristics_and_autotune_hooks_are_judged():
    def kernel_with(decorator: str) -> str:
        return source().replace(
            "@triton.jit\ndef _op_kernel", f"{decorator}\n@triton.jit\ndef _op_kernel"
        )

    honest = kernel_with(
        "@triton.autotune(configs=[triton.Config({'BLOCK': 128}, num_warps=4)], key=['n'])\n"
        "@triton.heuristics({'EVEN': lambda args: args['n'] % 128 == 0})"
    ).replace("BLOCK=256)", ")")
    assert check_source(honest, ProblemOptions()) == ()
    compute = kernel_with("@triton.heuristics({'B': lambda args: args['x_ptr'].sum()})")
    assert "torch-compute-in-forward" in rules(compute)
    prune = kernel_with("@triton.autotune(configs=[], key=[], prune_configs_by={})")
    assert "decorators" in rules(prune)
    bench = kernel_with("@triton.autotune(configs=[], key=[], do_bench=print)")
    assert "decorators" in rules(bench)
    hook = kernel_with("@triton.autotune(configs=[triton.Config({}, pre_hook=print)], key=[])")
    assert "hooks" in rules(hook)
    positional = kernel_with("@triton.autotune([triton.Config({}, 4, 2, 1, None, print)], [])")
    assert "decorators" in rules(positional)
    metadata = source().replace("@triton.jit\n", "@triton.jit(launch_metadata=print)\n", 1)
    assert "decorators" in rules(metadata)


@pytest.mark.parametrize(
    "body",
    [
        "    y = torch.exp(offs)\n",
        "    y = _python_helper(offs)\n",
        "    y = F.silu\n",
    ],
)
def test_kernel_bodies_use_triton_language_only(body):
    extra = "def _python_helper(v):\n    return v\n"
    text = source(extra=extra).replace(
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n",
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n" + body,
    )
    assert "kernel-code" in rules(text), check_source(text, ProblemOptions())


@pytest.mark.parametrize(
    "extra,launcher,init,rule",
    [
        ("", "f = lambda t=x: t * 2\ny = f()\n", "", "torch-compute-in-forward"),
        ("", "", "self.grid = lambda meta: (meta['x_ptr'].sum(),)\n", "torch-compute-in-forward"),
        ("_double = lambda t: t * 2\n", "y = _double(x)\n", "", "torch-compute-in-forward"),
        ("", "torch = weight\n", "", "rebinding"),
        ("def len(v):\n    return 0\n", "", "", "rebinding"),
        ("", "f = functools.reduce(getattr, ('nn', 'functional'), torch)\n", "", "dynamic-import"),
        ("", "functools.reduce(getattr, ('cuda',), torch).Event = None\n", "", "module-patching"),
    ],
)
def test_defaults_stored_lambdas_shadowed_names_and_indirect_stores(extra, launcher, init, rule):
    text = source(launcher, extra=extra, init=init)
    assert rule in rules(text), check_source(text, DEFAULTS)


def test_a_static_method_helper_is_followed_with_its_real_parameters():
    methods = "@staticmethod\ndef _double(t):\n    return t * 2\n"
    text = source(methods=methods, forward="return op(self._double(x), self.weight)")
    assert "torch-compute-in-forward" in rules(text)


def test_a_module_level_lambda_launcher_helper_is_followed():
    extra = "grid_of = lambda n: (triton.cdiv(n, 256),)\n"
    honest = source(extra=extra).replace("(triton.cdiv(x.numel(), 256),)", "grid_of(x.numel())")
    assert check_source(honest, DEFAULTS) == ()


def test_a_main_block_is_not_import_time_code():
    main = "\n\nif __name__ == '__main__':\n    print(ModelNew(4)(torch.randn(4)))\n"
    assert check_source(source() + main, DEFAULTS) == ()


# ---- import-time code ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "extra",
    [
        "_T = torch.arange(16)\n",
        "_ANSWER = torch.randn(4) * 2\n",
        "print('hello')\n",
        "for _i in range(3):\n    pass\n",
        "def _make():\n    return 1\n\n\n_N = _make()\n",
        "def _f(x, table=torch.ones(3)):\n    return table\n",
        "class _C:\n    table = torch.ones(3)\n",
        "_S = sorted([3, 1], key=lambda v: torch.exp(v))\n",
        "_X = {}.setdefault('k', [])\n",
        "if True:\n    _T = torch.zeros(2)\n",
    ],
)
def test_module_level_code_beyond_constants_is_rejected(extra):
    text = source(extra=extra)
    assert "import-time-code" in rules(text), check_source(text, ProblemOptions())


def test_module_level_constants_pass():
    extra = (
        "_LOG2E = math.log2(math.e)\n"
        "_BLOCKS = tuple(2 ** i for i in range(4, 8))\n"
        "_WARPS = {128: 4, 256: 8}\n"
        "_CONFIGS = [triton.Config({'BLOCK': b}, num_warps=w) for b, w in _WARPS.items()]\n"
        "BLOCK_M: tl.constexpr = 64\n"
        "_BIG = tl.constexpr(1 << 20)\n"
        "_EPS = torch.finfo(torch.float32).eps\n"
        "_DTYPES = (torch.float16, torch.bfloat16)\n"
        "grid_of = lambda n: (triton.cdiv(n, 256),)\n"
    )
    assert check_source(source(extra=extra), ProblemOptions()) == ()


def test_every_new_rule_is_registered_and_documented():
    doc = (ROOT / "docs" / "evaluator.md").read_text()
    for rule in ("import-time-code", "rebinding", "decorators", "hooks", "special-methods",
                 "triton-api", "kernel-code"):  # fmt: skip
        assert rule in RULES
        assert f"`{rule}`" in doc, rule


def test_honest_names_that_shadow_builtins_pass():
    text = source().replace("def forward(self, x):\n        return op(x, self.weight)",
                            "def forward(self, input):\n        return op(input, self.weight)")  # fmt: skip
    assert check_source(text, ProblemOptions()) == ()


# ---- every honest candidate still passes --------------------------------------------------
_HONEST_FIXTURES = {  # candidate -> a problem it solves
    "add_rmsnorm": "add_rmsnorm",
    "gather_rows": "rotary_cache_buffer",
    "matmul_bias_silu": "matmul_bias_silu_fp32",
    "quick_gelu": "quick_gelu",
    "rmsnorm_autotune": "rmsnorm_weight",
    "rope": "rope",
    "rope_cancel_bf16": "rope_cancel_bf16",
    "rotate_in_place": "rotate_in_place",
    "silu_and_mul": "silu_and_mul",
    "softmax_wide": "softmax_wide",
    # statically honest; they fail later (a hang, a wild read, wrong values)
    "hang_forever": "quick_gelu",
    "crash_wild_pointer": "quick_gelu",
    "cheat_memorised_seed": "gelu_fp32",
    "cheat_input_mutation": "gelu_fp32",
    "cheat_all_zeros": "softmax_wide",
    "cheat_uniform_guess": "softmax_wide",
    "cheat_half_rows": "silu_and_mul",
}


def _passes(text: str, problem_path: Path) -> None:
    spec = load_problem(problem_path)
    reasons = check_source(text, spec.options, problem_dtype_hint(spec.source))
    assert reasons == (), [str(r) for r in reasons]


@pytest.mark.parametrize("name", sorted(_HONEST_FIXTURES))
def test_candidate_fixtures_that_reach_the_dynamic_checks_pass(name):
    text = (HERE / "candidates" / f"{name}.py").read_text()
    _passes(text, HERE / "problems" / f"{_HONEST_FIXTURES[name]}.py")


@pytest.mark.parametrize(
    "problem", sorted((ROOT / "bench" / "problems").glob("*.py")), ids=lambda p: p.stem
)
def test_codegen_candidates_for_the_bench_problems_pass(problem):
    from kbot.propose.codegen import generate

    for candidate in generate(load_problem(problem)):
        _passes(candidate.source, problem)


@pytest.mark.parametrize(
    "fixture",
    sorted((ROOT / "tests" / "propose_inductor" / "fixtures").glob("*.txt")),
    ids=lambda p: p.stem,
)
def test_inductor_candidates_pass(fixture):
    from kbot.propose.inductor import extract
    from kbot.propose.inductor.records import capture_from_json

    name = f"{fixture.stem.split('__')[0]}.py"
    own = ROOT / "tests" / "propose_inductor" / "problems" / name  # the template captures'
    problem = own if own.exists() else ROOT / "bench" / "problems" / name
    capture = capture_from_json(
        fixture.read_text(), json.loads(fixture.with_suffix(".json").read_text())
    )
    _passes(extract(capture, load_problem(problem)), problem)


def test_published_best_candidates_pass():
    for path in sorted(
        (ROOT / "tests" / "publish" / "fixtures" / "runs").glob("*/best_candidate.py")
    ):
        assert check_source(path.read_text(), ProblemOptions()) == (), path
