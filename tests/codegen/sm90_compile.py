"""Compiles one kernel of a candidate file for sm_90 with Triton's own compiler (no GPU needed)
and writes its PTX and cubin size as JSON: `python sm90_compile.py JOB.json OUT.json`. The job
names the candidate file, the kernel, its constexprs and num_warps, and the types of its other
parameters: `types` by name, else `*<pointer>` for a `_ptr` name and `i32` for the rest.

Run as a child process, never in pytest's: there, Triton was imported under its interpreter
(its own `@triton.jit` functions, `tl.sum` and `tl.cdiv`, are interpreted ones), and running a
kernel leaves `triton.language.core` patched with interpreter semantics (Triton 3.9 patches it
for each device-function call and never restores it). A compile in that process fails, or,
from a warm Triton cache, passes without compiling anything.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(job_path: str, out_path: str) -> int:
    os.environ["TRITON_INTERPRET"] = "0"  # before triton is imported: @triton.jit compiles
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kbot.problem.runtime import import_file

    job = json.loads(Path(job_path).read_text())
    kernel = getattr(import_file(Path(job["candidate"]), prefix="sm90_compile"), job["kernel"])
    pointer, types = f"*{job['pointer']}", job["types"]
    signature = {
        name: types.get(name, pointer if name.endswith("_ptr") else "i32")
        for name in kernel.arg_names
    }
    signature.update({name: "constexpr" for name in job["constexprs"]})
    compiled = triton.compile(
        ASTSource(fn=kernel, signature=signature, constexprs=job["constexprs"]),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": job["num_warps"], "enable_fp_fusion": True},
    )
    result = {"ptx": compiled.asm["ptx"], "cubin_bytes": len(compiled.asm["cubin"])}
    Path(out_path).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
