"""Launch by batch size: one candidate carrying a decode launch and a prefill launch.

A serving op runs at decode sizes (1-64 rows, where filling the SMs and the launch decide)
and at prefill sizes (thousands of rows, where streaming memory decides). One configuration
serves both poorly: on the H200, gelu_tanh_and_mul's one-configuration winner ran 0.85x
torch.compile at T=16 and 0.97x at T=4096, and log_softmax over 128k columns with one program
per row ran 0.21x compile at T=1 (one SM busy) and 1.03x at T=16384.
torch.compile autotunes per size; kbot's counterpart is this: the launcher picks the decode
variant up to DECODE_MAX_ROWS rows and the prefill variant above, each with its own kernels
and its own tunables (the decode ones prefixed DECODE_), which the tune proposer mutates
independently.
"""

from __future__ import annotations

import re
from dataclasses import replace

from kbot.propose.codegen.emitted import Emitted, Tunable
from kbot.propose.codegen.trace import Unsupported

# Decode batches in serving: up to 64 tokens (the suite's T = 1, 16, 64); prefill is more.
DECODE_MAX_ROWS = 64
DECODE_PREFIX = "DECODE_"
# The launcher's name for the row count, by schedule: row-wise kernels, tiled middle-dim ones.
ROW_COUNTS = ("n_rows", "n_outer")


def by_batch_size(decode: Emitted, prefill: Emitted) -> Emitted:
    """One launcher: the lines both variants share (sizes, the row count), then a branch on
    the row count. `decode` must have been emitted under a different op name, so its kernels
    do not clash with `prefill`'s."""
    renamed = {t.name: DECODE_PREFIX + t.name for t in decode.tunables}
    small = [_rename(line, renamed) for line in decode.launcher]
    shared = _shared_prefix(small, prefill.launcher)
    defined = {line.split(" = ", 1)[0] for line in shared if " = " in line}
    rows = next((name for name in ROW_COUNTS if name in defined), None)
    if rows is None:
        raise Unsupported("the launcher has no row count to choose a launch by")
    clash = {k.name for k in decode.kernels} & {k.name for k in prefill.kernels}
    if clash:
        raise Unsupported(f"decode and prefill kernels share names: {sorted(clash)}")
    launcher = shared + [
        "# Decode batches launch their own configuration (many small programs fill the SMs);",
        "# prefill's programs are sized to stream memory.",
        f"if {rows} <= DECODE_MAX_ROWS:",
        *[f"    {line}" for line in small[len(shared) :]],
        "else:",
        *[f"    {line}" for line in prefill.launcher[len(shared) :]],
    ]
    tunables = [
        Tunable(
            "DECODE_MAX_ROWS", DECODE_MAX_ROWS, "row counts up to this take the DECODE_ launch"
        ),
        *[replace(t, name=renamed[t.name], why=f"decode: {t.why}") for t in decode.tunables],
        *prefill.tunables,
    ]
    params = {**prefill.params, "decode": dict(decode.params), "decode_max_rows": DECODE_MAX_ROWS}
    note = "; ".join(n for n in (decode.note, prefill.note) if n)
    return Emitted(decode.kernels + prefill.kernels, launcher, tunables, params, note)


def _shared_prefix(a: list[str], b: list[str]) -> list[str]:
    count = 0
    while count < min(len(a), len(b)) and a[count] == b[count]:
        count += 1
    return a[:count]


def _rename(line: str, renamed: dict[str, str]) -> str:
    """Module constants in a launcher line to their DECODE_ names; a keyword argument of the
    same name (`BLOCK_N=BLOCK_N`: the kernel's constexpr) keeps its name."""
    for old, new in renamed.items():
        line = re.sub(rf"\b{old}\b(?!\s*=(?!=))", new, line)
    return line
