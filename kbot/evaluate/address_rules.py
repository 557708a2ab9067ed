"""Where a candidate may read a tensor's address (`data_ptr()`) or its offset into its storage
(`storage_offset()`, the address in elements past the buffer's start): in an alignment test
(`x.data_ptr() % 16`, a power of two no larger than the span the judge varies) or an identity
test between two of them (`out.data_ptr() == x.data_ptr()`). The judge draws only the low
bits of each input's address (kbot.evaluate.input_places: shifts below 512 bytes); a result
keyed on higher bits (`(x.data_ptr() >> 12) % 1024 == 0`: wrong at one address in a
thousand, or `x.storage_offset() * 4 >= 512`: wrong for `x[1:]` of wide rows) is wrong where
the judge never looks, so no other use of either is accepted. The kernel-side twin, a pointer
cast to an integer inside a kernel, is refused where the kernel runs (kbot.evaluate.launch_hooks
on a GPU, the interpreter's builder on a CPU)."""

from __future__ import annotations

import ast

from kbot.evaluate.names import parent_map
from kbot.evaluate.verdict import Reason

# bytes: the judge places inputs at every multiple of 16 below this past an aligned address
# (kbot.evaluate.input_places), so an alignment test up to it is one the trials exercise
SHIFT_PERIOD = 512
# elements: an offset's alignment test may span no more than the judge's shifts cover in the
# widest common element (8 bytes)
OFFSET_PERIOD = SHIFT_PERIOD // 8
RULE = "address-use"
MESSAGE = (
    "reads a tensor's address or storage offset other than in an alignment test "
    f"(`x.data_ptr() % 16 == 0` or `& 15`, a power of two up to {SHIFT_PERIOD}; "
    f"`x.storage_offset() % 4`, up to {OFFSET_PERIOD}) or a comparison of two addresses "
    "(`a.data_ptr() == b.data_ptr()`): a result that depends on where memory sits is wrong at "
    "addresses the judge does not draw"
)
# each method and the largest alignment test on it the judge's placements exercise
ADDRESS_METHODS = {"data_ptr": SHIFT_PERIOD, "storage_offset": OFFSET_PERIOD}


def check(tree: ast.Module, parents: dict[int, ast.AST] | None = None) -> list[Reason]:
    """Every mention of `.data_ptr` outside the two tests above (`parents`: parent_map)."""
    parents = parent_map(tree) if parents is None else parents
    reasons = []
    for node in ast.walk(tree):
        mentioned = (isinstance(node, ast.Attribute) and node.attr in ADDRESS_METHODS) or (
            isinstance(node, ast.Constant) and node.value in ADDRESS_METHODS
        )
        if mentioned and not _allowed(node, parents):
            reasons.append(Reason(RULE, MESSAGE, getattr(node, "lineno", None)))
    return reasons


def _is_address(node: ast.AST) -> bool:
    """`<expr>.data_ptr()`, no arguments."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ADDRESS_METHODS
        and not node.args
        and not node.keywords
    )


def _allowed(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """`node` (an attribute or string naming the method) is the callee of an address read in
    one of the two tests."""
    call = parents.get(id(node))
    if not (isinstance(call, ast.Call) and call.func is node and _is_address(call)):
        return False
    use = parents.get(id(call))
    if (
        isinstance(use, ast.BinOp)
        and isinstance(use.op, (ast.Mod, ast.BitAnd))
        and use.left is call
    ):
        # `% 2**k` or `& (2**k - 1)`: the low k bits, which the judge's placements vary
        right = use.right
        if not (isinstance(right, ast.Constant) and type(right.value) is int):
            return False
        span = right.value if isinstance(use.op, ast.Mod) else right.value + 1
        return 0 < span <= ADDRESS_METHODS[call.func.attr] and span & (span - 1) == 0
    if isinstance(use, ast.Compare) and len(use.ops) == 1:
        pair = [use.left, *use.comparators]
        return isinstance(use.ops[0], (ast.Eq, ast.NotEq)) and all(map(_is_address, pair))
    return False
