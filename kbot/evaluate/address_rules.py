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
    """Every mention of `.data_ptr` or `.storage_offset` outside the tests above (`parents`:
    parent_map)."""
    parents = parent_map(tree) if parents is None else parents
    constants = _module_ints(tree)
    reasons = []
    for node in ast.walk(tree):
        mentioned = (isinstance(node, ast.Attribute) and node.attr in ADDRESS_METHODS) or (
            isinstance(node, ast.Constant) and node.value in ADDRESS_METHODS
        )
        if mentioned and not _allowed(node, parents, constants):
            reasons.append(Reason(RULE, MESSAGE, getattr(node, "lineno", None)))
    return reasons


def _module_ints(tree: ast.Module) -> dict[str, int]:
    """Module-level names bound once, to an int literal (`ALIGNMENT = 16`)."""
    bound: dict[str, list] = {}
    for statement in tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets = [statement.target]
        for target in targets:
            if isinstance(target, ast.Name):
                bound.setdefault(target.id, []).append(statement.value)
    for node in ast.walk(tree):  # a name rebound anywhere else is no constant
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in bound:
            bound[node.id].append(None)
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bound.setdefault(name, []).extend([None, None])
    return {
        name: values[0].value
        for name, values in bound.items()
        if len(values) == 2  # the module-level assignment, seen once more by the walk
        and isinstance(values[0], ast.Constant)
        and type(values[0].value) is int
    }


def _is_address(node: ast.AST) -> bool:
    """`<expr>.data_ptr()` or `<expr>.storage_offset()`, no arguments."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ADDRESS_METHODS
        and not node.args
        and not node.keywords
    )


def _allowed(node: ast.AST, parents: dict[int, ast.AST], constants: dict[str, int]) -> bool:
    """`node` (an attribute or string naming the method) is the callee of an address read in
    one of the tests: an alignment test, an equality of two addresses, an offset compared with
    0, or an offset passed on to `as_strided` (a view at the tensor's own place)."""
    call = parents.get(id(node))
    if not (isinstance(call, ast.Call) and call.func is node and _is_address(call)):
        return False
    method = call.func.attr
    tested, limit = call, ADDRESS_METHODS[method]
    use = parents.get(id(call))
    if method == "storage_offset":
        if _into_as_strided(call, parents):
            return True
        scaled = _times_element_size(call, use)
        if scaled is not None:  # `x.storage_offset() * x.element_size()`: bytes, as data_ptr
            tested, limit = scaled, SHIFT_PERIOD
            use = parents.get(id(scaled))
    if isinstance(use, ast.BinOp) and isinstance(use.op, (ast.Mod, ast.BitAnd)):
        # `% 2**k` or `& (2**k - 1)`: the low k bits, which the judge's placements vary
        if use.left is not tested:
            return False
        right = use.right
        value = right.value if isinstance(right, ast.Constant) else None
        if isinstance(right, ast.Name):
            value = constants.get(right.id)
        if type(value) is not int:
            return False
        span = value if isinstance(use.op, ast.Mod) else value + 1
        return 0 < span <= limit and span & (span - 1) == 0
    if isinstance(use, ast.Compare) and len(use.ops) == 1 and use.left is call:
        if not isinstance(use.ops[0], (ast.Eq, ast.NotEq)):
            return False
        other = use.comparators[0]
        if method == "storage_offset" and isinstance(other, ast.Constant) and other.value == 0:
            return True  # at the start of its storage or not: both kinds of place are drawn
        return _is_address(other)
    if isinstance(use, ast.Compare) and len(use.ops) == 1:
        pair = [use.left, *use.comparators]
        return isinstance(use.ops[0], (ast.Eq, ast.NotEq)) and all(map(_is_address, pair))
    return False


def _times_element_size(call: ast.Call, use: ast.AST | None) -> ast.BinOp | None:
    """`use` when it is `call * <expr>.element_size()` (either order), else None."""
    if not (isinstance(use, ast.BinOp) and isinstance(use.op, ast.Mult)):
        return None
    other = use.right if use.left is call else use.left
    sized = (
        isinstance(other, ast.Call)
        and isinstance(other.func, ast.Attribute)
        and other.func.attr == "element_size"
        and not other.args
    )
    return use if sized else None


def _into_as_strided(call: ast.Call, parents: dict[int, ast.AST]) -> bool:
    """`call` (an offset read) is, through sums and products only, the storage offset passed to
    `as_strided`: the view it makes sits at the tensor's own place, wherever that is."""
    child, parent = call, parents.get(id(call))
    while isinstance(parent, ast.BinOp) and isinstance(parent.op, (ast.Add, ast.Sub, ast.Mult)):
        child, parent = parent, parents.get(id(parent))
    if isinstance(parent, ast.keyword) and parent.arg == "storage_offset":
        child, parent = parent, parents.get(id(parent))
        return _is_as_strided(parent)
    if not (_is_as_strided(parent) and child in parent.args):
        return False
    method = isinstance(parent.func, ast.Attribute) and not _is_torch_function(parent.func)
    return parent.args.index(child) == (2 if method else 3)


def _is_as_strided(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "as_strided"
    )


def _is_torch_function(func: ast.Attribute) -> bool:
    """`torch.as_strided` (the tensor is the first argument), not `x.as_strided`."""
    return isinstance(func.value, ast.Name) and func.value.id == "torch"
