"""What Triton's language lets a kernel do that a judged kernel may not: read an address as a
number, or run inline PTX beyond arithmetic on its own operands.

- A pointer cast to an integer (`x_ptr.to(tl.int64)`, a pointer handed to inline asm) is the
  kernel-side twin of `data_ptr()` outside an alignment test (kbot.evaluate.address_rules): a
  result keyed on address bits the judge does not vary is wrong where it never looks.
- Inline PTX runs only on a GPU (the CPU interpreter has none), and there it could read the
  clock or the SM it runs on, load and store any address past the canaries, or branch forever.
  An asm string may hold only the arithmetic, conversion and in-register instructions of
  ASM_OPCODES, on its operands and its own `.reg` registers (codegen's `cvt.rn.bf16.f32`).

The static rules check the asm strings a kernel's source spells (kbot.evaluate.static); at
run time a GPU launch's compiled kernel (its TTIR) and the CPU interpreter's builder are
checked too, so the rules hold with the static filter off.
"""

from __future__ import annotations

import ast
import re

from kbot.evaluate.names import parent_map
from kbot.evaluate.verdict import Reason

ADDRESS_RULE = "address-use"
ASM_RULE = "kernel-code"
PTR_TO_INT = "a kernel cast a pointer to an integer: its result would depend on where memory sits"

# PTX opcodes (the part before the first `.`) an inline asm string may use: arithmetic,
# conversions, comparisons and selects, bit manipulation, moves between registers, in-warp
# exchanges and tensor-core math on registers. Not: loads, stores, atomics, fences, barriers,
# branches, calls, traps, sleeps, texture or surface access, address conversions.
ASM_OPCODES = frozenset(
    "abs add addc and bfe bfi bfind brev clz cnot copysign cos cvt div dp2a dp4a ex2 fma lg2 "
    "lop3 mad mad24 madc max min mma mov mul mul24 neg not or popc prmt rcp redux rem rsqrt sad "
    "selp set setp shf shfl shl shr sin slct sqrt sub subc tanh testp xor".split()
)
# Special registers: the clock, the SM, the thread's place, performance counters.
_SPECIAL = re.compile(
    r"%(clock|globaltimer|smid|nsmid|warpid|nwarpid|gridid|tid|ntid|ctaid|nctaid|laneid|"
    r"lanemask|pm\d|envreg|dynamic_smem|total_smem|aggr_smem|reserved_smem|cluster|nclusterid|"
    r"is_explicit_cluster|current_graph_exec)"
)


def asm_refusal(asm: str) -> str | None:
    """Why an inline asm string is refused, or None: each statement an ASM_OPCODES opcode (an
    optional `@p` guard before it) or a `.reg` declaration, and no special register."""
    special = _SPECIAL.search(asm)
    if special:
        return f"inline asm reads the special register `{special.group(0)}`"
    for statement in re.split(r"[;\n]", asm):
        # a scope's braces open or close a statement; braces after the opcode are operands
        words = statement.strip().lstrip("{}").split()
        if words and words[0].startswith("@"):
            words = words[1:]
        if not words:
            continue
        opcode = words[0]
        if opcode.startswith("."):
            if opcode != ".reg":
                return f"inline asm declares `{opcode}` (only `.reg` registers)"
            continue
        if opcode.split(".")[0] not in ASM_OPCODES:
            return (
                f"inline asm runs `{opcode}`: only arithmetic, conversion and in-register "
                "instructions on its operands"
            )
    return None


ASM_FUNCTION = "inline_asm_elementwise"


def check(tree: ast.Module, parents: dict[int, ast.AST] | None = None) -> list[Reason]:
    """Each inline asm call of the source: its asm a literal string that asm_refusal passes;
    the function named anywhere but as the callee of such a call is refused too (`parents`:
    parent_map)."""
    parents = parent_map(tree) if parents is None else parents
    reasons = []
    for node in ast.walk(tree):
        named = (isinstance(node, ast.Attribute) and node.attr == ASM_FUNCTION) or (
            isinstance(node, ast.Name) and node.id == ASM_FUNCTION
        )
        if not named:
            continue
        call = parents.get(id(node))
        if not (isinstance(call, ast.Call) and call.func is node):
            why = f"`{ASM_FUNCTION}` named other than in a call (its asm is checked at the call)"
            reasons.append(Reason(ASM_RULE, why, node.lineno))
            continue
        asm = call.args[0] if call.args else None
        asm = next((k.value for k in call.keywords if k.arg == "asm"), asm)
        if not (isinstance(asm, ast.Constant) and isinstance(asm.value, str)):
            why = "inline asm must be a string literal at the call, so the rules can read it"
            reasons.append(Reason(ASM_RULE, why, call.lineno))
            continue
        why = asm_refusal(asm.value)
        if why is not None:
            reasons.append(Reason(ASM_RULE, why, call.lineno))
    return reasons


# TTIR lines: `tt.ptr_to_int`, and `tt.elementwise_inline_asm "<asm>" {...} %args : <types>`.
_INLINE_ASM = re.compile(r'tt\.elementwise_inline_asm\s+"((?:[^"\\]|\\.)*)"([^\n]*)')
_MLIR_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2}|\\|\")")


def _unescaped(text: str) -> str:
    def one(match: re.Match) -> str:
        code = match.group(1)
        return code if code in ("\\", '"') else chr(int(code, 16))

    return _MLIR_ESCAPE.sub(one, text)


def ttir_refusal(ttir: str) -> tuple[str, str] | None:
    """(rule, why) for a compiled kernel's TTIR that casts a pointer to an integer or runs
    inline asm the rules refuse (on a pointer operand, or outside ASM_OPCODES); else None."""
    if "tt.ptr_to_int" in ttir:
        return ADDRESS_RULE, PTR_TO_INT
    for match in _INLINE_ASM.finditer(ttir):
        operands = match.group(2).split("->")[0]
        if "!tt.ptr" in operands:
            return ADDRESS_RULE, "a kernel handed a pointer to inline asm (its address as a number)"
        why = asm_refusal(_unescaped(match.group(1)))
        if why is not None:
            return ASM_RULE, why
    return None


_CHECKED: dict[int, tuple[object, tuple[str, str] | None]] = {}


def compiled_refusal(kernel: object) -> tuple[str, str] | None:
    """ttir_refusal of a compiled kernel (what JITFunction.run returns on a GPU), once per
    kernel; None for anything without TTIR (the interpreter's launch returns no kernel)."""
    asm = getattr(kernel, "asm", None)
    if asm is None:
        return None
    seen = _CHECKED.get(id(kernel))
    if seen is not None and seen[0] is kernel:
        return seen[1]
    try:
        ttir = asm["ttir"]
    except (KeyError, TypeError):
        return None
    verdict = ttir_refusal(ttir if isinstance(ttir, str) else "")
    _CHECKED[id(kernel)] = (kernel, verdict)
    return verdict


class Refused(RuntimeError):
    """A launch the rules above refuse; `rule` names which."""

    def __init__(self, rule: str, why: str) -> None:
        super().__init__(f"kbot: {why}")
        self.rule, self.why = rule, why


def install_interpreter() -> bool:
    """The CPU interpreter's pointer-to-integer cast raises Refused (a compiled kernel's is
    found in its TTIR). False where the installed interpreter is not one this patch knows."""
    from kbot.evaluate.interpreter_compat import interpreter_parts

    found = interpreter_parts("InterpreterBuilder")
    if found is None or not hasattr(found[1], "create_ptr_to_int"):
        return False
    builder = found[1]

    def create_ptr_to_int(self, *args, **kwargs):
        # the interpreter wraps what a kernel raises: the forward call's guard keeps the rule
        from kbot.evaluate.compute_guard import refuse_launch

        refuse_launch(ADDRESS_RULE, PTR_TO_INT)
        raise Refused(ADDRESS_RULE, PTR_TO_INT)

    builder.create_ptr_to_int = create_ptr_to_int
    return True
