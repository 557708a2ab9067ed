"""The text of an emitted problem file (KernelBench format plus `CASES` and `KBOT`)."""

from __future__ import annotations

from kbot.scan.eager import IMPORTED_HELPERS
from kbot.scan.findings import Finding, Flag
from kbot.scan.inputs import InputArg, InputPlan, case_variables
from kbot.scan.location import ImportLocation
from kbot.scan.rebuild import Rebuilt

EMITTED_MARK = "Written by `kbot scan --emit-problems`"  # in every problem's docstring

_FLOAT_DTYPES = {"float16", "bfloat16", "float32", "float64", "half", "float", "double"}
_COMPLEX_DTYPES = {"complex64", "complex128"}  # a rotary's freqs_cis


# No machine's path is written into a problem: the file finds the checkout that holds the op,
# so the run directory an Action job uploads imports the op on the job that downloads it.
IMPORT_ROOT_HELPER = '''def _import_root(target_file: str, import_dir: str) -> str:
    """The folder the target's package imports from, in the checkout that holds `target_file`
    (a path from the repository's root): $KBOT_REPO, else the first folder above this file or
    above the working directory that holds it, else the scan's root that the target.json beside
    this file records."""
    here = os.path.abspath(__file__)
    starts = [os.environ.get("KBOT_REPO", ""), os.path.dirname(here), os.getcwd()]
    beside = (os.path.splitext(here)[0] + ".target.json", os.path.join(starts[1], "target.json"))
    for meta in beside:
        if os.path.isfile(meta):
            with open(meta, encoding="utf-8") as handle:
                starts.append(str(json.load(handle).get("root") or ""))
            break
    for start in filter(None, starts):
        folder = os.path.abspath(start)
        while True:
            if os.path.isfile(os.path.join(folder, target_file)):
                return os.path.join(folder, import_dir) if import_dir else folder
            if os.path.dirname(folder) == folder:
                break
            folder = os.path.dirname(folder)
    raise ImportError(
        f"no checkout holding {target_file} above this file, the working directory or the "
        "scan's root: run from inside the repository or set KBOT_REPO to it"
    )'''

# Two scanned repositories may both have an `engine`: the one a process imported first stays in
# sys.modules, and a later problem would import (or fail to find) the op in that other checkout.
OTHER_CHECKOUTS_HELPER = '''def _forget_other_checkouts(package: str, root: str) -> None:
    """Drops `package` and its submodules from sys.modules where they were imported from outside
    `root`, so that the import below reads this checkout's."""
    inside = os.path.join(os.path.realpath(root), "")
    for name, module in list(sys.modules.items()):
        if name != package and not name.startswith(package + "."):
            continue
        file = getattr(module, "__file__", None)  # a namespace package has none: kept
        if file and not os.path.realpath(file).startswith(inside):
            del sys.modules[name]'''


def render_problem(
    finding: Finding,
    plan: InputPlan,
    location: ImportLocation | None = None,
    rebuilt: Rebuilt | None = None,
    why_rebuilt: str = "",
    root: ImportLocation | None = None,
) -> str:
    """The problem file: it imports the op (`location`) or holds `rebuilt`, a copy of its
    source, which finds the project's own packages it imports where `root` says."""
    imports = _imports(finding, location, rebuilt, root)
    parts = [_header(finding, plan, location, why_rebuilt), imports]
    parts.append(
        _class_model(finding, plan, location is not None)
        if finding.entry
        else _function_model(finding, plan)
    )
    parts.append(_module_values(finding, plan))
    parts.append(_get_init_inputs(finding, plan))
    parts.append(_get_inputs(plan))
    head, rest = parts[:2], parts[2:]
    return (
        "\n\n".join(p.rstrip("\n") for p in head)
        + "\n\n\n"
        + "\n\n\n".join(p.rstrip("\n") for p in rest)
        + "\n"
    )


def _header(finding: Finding, plan: InputPlan, location: ImportLocation | None, why: str) -> str:
    what = f"{finding.qualname}.{finding.entry}" if finding.entry else finding.qualname
    how = (
        f"Imports the op from `{location.module}`"
        if location
        else f"The op is rebuilt from source ({why})"
    )
    how += "; it runs eagerly (torch.compile of Model is the baseline)."
    lines = [
        f'"""kbot problem `{finding.name}`: {what} of {finding.file}:{finding.line} ({finding.kind.value}).',
        "",
        f"{EMITTED_MARK}; inputs from {plan.source}. {how}",
    ]
    if plan.parameter_dtype and plan.source == ".kbot.yml":
        lines.append(f"Float parameters in {plan.parameter_dtype} (the target's `params_dtype`).")
    if plan.tensor_dtypes:
        held = ", ".join(f"{name} {dtype}" for name, dtype in plan.tensor_dtypes)
        lines.append(f"Module tensors in the dtypes the profiled callers held them in: {held}.")
    for note in finding.flags:
        lines.append(f"Note: {note.flag.value}: {note.reason}.")
    lines.append('"""')
    return "\n".join(lines)


def _root_lines(location: ImportLocation, packages: list[str]) -> list[str]:
    """`_ROOT`, the folder the project's packages import from, first on sys.path, and
    `packages` read from there only."""
    if location.file:
        lines = [
            "",
            IMPORT_ROOT_HELPER,
            "",
            "",
            f"_ROOT = _import_root({location.file!r}, {location.import_dir!r})",
        ]
    else:  # a package above the scanned folder: this machine's path is all there is
        lines = [f"_ROOT = {str(location.sys_path)!r}  # where the target's package imports from"]
    lines += [
        "# First on the path, also when it is there already: a file beside this problem (one",
        "# named like the target's module) must not shadow the module imported below.",
        "if _ROOT in sys.path:",
        "    sys.path.remove(_ROOT)",
        "sys.path.insert(0, _ROOT)",
        "",
        "",
        OTHER_CHECKOUTS_HELPER,
        "",
        "",
    ]
    return lines + [f"_forget_other_checkouts({package!r}, _ROOT)" for package in packages]


def _imports(
    finding: Finding,
    location: ImportLocation | None,
    rebuilt: Rebuilt | None,
    root: ImportLocation | None = None,
) -> str:
    """The import mode's preamble (`location`), or the rebuilt copy's (`rebuilt`, with `root`
    where its module's package would import from, for the project's packages it imports)."""
    lines = ["from __future__ import annotations", ""]
    if location is not None:
        lines += [
            "import inspect",
            "import json",
            "import os",
            "import sys",
            "import types",
            "",
            "import torch",
            "from torch import nn",
            "",
        ]
        lines += _root_lines(location, [location.module.split(".")[0]])
        name = finding.qualname.split(".")[0]
        rest = finding.qualname[len(name) :]
        lines.append(f"from {location.module} import {name} as _Outer  # noqa: E402")
        lines.append(f"_Target = _Outer{rest}")
        lines += ["", "", IMPORTED_HELPERS, "", ""]
        if finding.entry:
            lines.append("_eager_modules(*_Target.__mro__)")
        else:
            lines.append("_eager_modules(_Target)")
            lines.append("_reference = inspect.unwrap(_eager(_Target))")
        return "\n".join(lines)
    assert rebuilt is not None
    packages = list(rebuilt.packages) if root is not None else []
    if packages:  # the copy imports the project's own packages: from this checkout
        lines += ["import json", "import os", "import sys"]
    if any(not c.class_name for c in finding.init_configs):
        lines.append("import types")
    lines += ["import torch", "from torch import nn", ""]
    if packages:
        lines += _root_lines(root, packages) + [""]
    lines.append("# --- copied from the target's source ---")
    header = {"import torch", "from torch import nn"}
    lines.append(
        "\n".join(line for line in rebuilt.source.rstrip("\n").splitlines() if line not in header)
    )
    lines.append("# --- end of copy ---")
    lines.append(f"_Target = {rebuilt.callable_name}")
    if not finding.entry:
        lines.append("_reference = _Target")
    return "\n".join(lines)


def _call_args(args: tuple[InputArg, ...], scalars_from_self: bool) -> str:
    out = []
    for arg in args:
        if arg.per_case:
            out.append(f"{arg.name}={arg.name}")
        elif not scalars_from_self:
            out.append(f"{arg.name}={arg.value!r}")
        else:
            out.append(f"{arg.name}=self.{arg.name}")
    return ", ".join(out)


def _class_model(finding: Finding, plan: InputPlan, imported: bool) -> str:
    tensors = [a.name for a in plan.args if a.per_case]
    init = ", ".join(plan.init_names)
    lines = [
        "if issubclass(_Target, nn.Module):",
        "",
        "    class _Base(_Target):",
        "        pass",
        "",
        "else:",
        "    # A backend implementation that is not a module: make it one, keeping its attributes.",
        "    class _Base(nn.Module, _Target):",
        "        def __init__(self, *args):",
        "            nn.Module.__init__(self)",
        "            _Target.__init__(self, *args)",
        "",
        "",
    ]
    if imported:
        lines += [
            "_eager_class(_Base, _Target)",
            f"_entry = _eager(_Target.{finding.entry})",
            "",
            "",
        ]
    else:
        lines += [f"_entry = _Target.{finding.entry}", "", ""]
    lines += [
        "class Model(_Base):",
        f'    """{finding.qualname} with `forward` bound to its reference, `{finding.entry}`."""',
        "",
        f"    def __init__(self{', ' + init if init else ''}):",
        f"        super().__init__({init})",
    ]
    if imported:
        lines.append("        _eager_attributes(self)")
    lines += _held_dtypes(plan)
    # Any method of the class (`add_rms_forward`) may be the reference, with its own arguments.
    # Bound as `_entry`, not `_reference`: the parity test the publisher renders from this file
    # defines a `_reference` of its own, and a function problem's `_reference` means the
    # function itself to the publisher.
    lines += [
        "",
        f"    def forward(self{''.join(', ' + t for t in tensors)}):",
        f"        return _entry(self, {_call_args(plan.args, False)})",
    ]
    return "\n".join(lines)


def _held_dtypes(plan: InputPlan) -> list[str]:
    """Model.__init__'s lines casting the module's tensors to the dtypes its callers hold them
    in (InputPlan.tensor_dtypes, parameter_dtype): what the kernel is judged with, and what
    the PR's guard pins (kbot.publish.module_facts.weight_dtype_terms)."""
    lines = []
    if plan.parameter_dtype:
        lines += [
            f"        # Float parameters in {plan.parameter_dtype}, as the served model holds them.",
            "        for _parameter in self.parameters():",
            "            if _parameter.is_floating_point():",
            f"                _parameter.data = _parameter.data.to(torch.{plan.parameter_dtype})",
        ]
    if plan.tensor_dtypes:
        lines.append("        # The dtypes the profiled callers held these tensors in.")
        lines += [
            f"        self.{name}.data = self.{name}.data.to(torch.{dtype})"
            for name, dtype in plan.tensor_dtypes
        ]
    return lines


def _function_model(finding: Finding, plan: InputPlan) -> str:
    tensors = [a.name for a in plan.args if a.per_case]
    scalars = [a.name for a in plan.args if not a.per_case]
    lines = [
        "class Model(nn.Module):",
        f'    """Calls `{finding.qualname}` eagerly; its scalar arguments are constructor arguments."""',
        "",
        f"    def __init__(self{''.join(', ' + s for s in scalars)}):",
        "        super().__init__()",
    ]
    lines += [f"        self.{s} = {s}" for s in scalars]
    lines += [
        "",
        f"    def forward(self{''.join(', ' + t for t in tensors)}):",
        f"        return _reference({_call_args(plan.args, True)})",
    ]
    return "\n".join(lines)


def _module_values(finding: Finding, plan: InputPlan) -> str:
    cases = ", ".join(
        "dict(" + ", ".join(f"{k}={v!r}" for k, v in c.items()) + ")" for c in plan.cases
    )
    options = [f"name={finding.name!r}"]
    if finding.has_flag(Flag.STOCHASTIC):
        options.append("stochastic=True")
    if finding.has_flag(Flag.IN_PLACE):
        # The evaluator then checks what the op writes into its inputs instead of rejecting it.
        options.append("mutates_inputs=True")
    numbers = [a.name for a in plan.args if a.case_variable is not None]
    if numbers:
        # A token count passed to forward as an int: the judge checks each case passes one.
        options.append(f"scalar_inputs={numbers!r}")
    return f"CASES = [{cases}]\nKBOT = dict({', '.join(options)})"


def _get_init_inputs(finding: Finding, plan: InputPlan) -> str:
    if finding.entry:
        values = list(plan.init_args)
        comment = f"  # {', '.join(plan.init_names)}" if plan.init_names else ""
    else:
        values = [a.value for a in plan.args if not a.per_case]
        comment = ""
    return f"def get_init_inputs():\n    return {values!r}{comment}"


def _get_inputs(plan: InputPlan) -> str:
    first = plan.cases[0] if plan.cases else {}
    variables = case_variables(plan)
    signature = ", ".join(f"{v}={first.get(v, 1)!r}" for v in variables)
    lines = [f"def get_inputs({signature}):"]
    tensors = []
    for arg in plan.args:
        if arg.case_variable is not None:
            lines.append(f"    {arg.name} = {arg.case_variable}")
            tensors.append(arg.name)
            continue
        if arg.shape is None:
            continue
        shape = (
            "(" + ", ".join(str(d) for d in arg.shape) + ("," if len(arg.shape) == 1 else "") + ")"
        )
        dtype = arg.dtype or "float32"
        if dtype in _FLOAT_DTYPES and arg.positive:
            expr = f"torch.rand({shape}, dtype=torch.{dtype}) + 0.5"
        elif dtype in _FLOAT_DTYPES | _COMPLEX_DTYPES:
            expr = f"torch.randn({shape}, dtype=torch.{dtype})"
        elif dtype == "bool":
            expr = f"torch.rand({shape}) < 0.5"
        else:
            expr = f"torch.randint(0, {arg.high}, {shape}, dtype=torch.{dtype})"
        lines.append(f"    {arg.name} = {expr}")
        tensors.append(arg.name)
    lines.append(f"    return [{', '.join(tensors)}]")
    return "\n".join(lines)
