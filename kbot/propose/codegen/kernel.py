"""A kernel being written: its arguments (tensors, strides, sizes, floats, constexprs) and body,
rendered as a `@triton.jit` function plus the matching launch call for the launcher."""

from __future__ import annotations

from dataclasses import dataclass, field

from kbot.propose.codegen.lowering import KernelBody


@dataclass
class KernelSource:
    name: str  # `_rmsnorm_kernel`
    doc: str
    body: KernelBody
    leading: list[tuple[str, str]] = field(default_factory=list)  # (param, launcher expr)
    constexprs: list[str] = field(default_factory=list)

    def params_and_args(self) -> list[tuple[str, str]]:
        """(kernel parameter, launcher expression) pairs in signature order."""
        pairs: list[tuple[str, str]] = []
        for arg, _rank in self.body.tensor_args.values():
            pairs.append((f"{arg}_ptr", arg))
        for arg, rank in self.body.tensor_args.values():
            pairs += [(f"{arg}_stride{d}", f"{arg}.stride({d})") for d in range(rank)]
        pairs += [(n, n) for n in self.body.used_sizes]
        pairs += self.leading
        pairs += [(n, n) for n in self.body.float_args]
        return pairs

    def _constexprs(self) -> list[str]:
        rounds = any(h.startswith("_round_") for h in self.body.helpers)
        extra = ["BITWISE_ROUNDING"] if rounds else []
        if "_tanh_libdevice" in self.body.helpers:
            extra.append("ON_GPU")
        return self.constexprs + extra

    def render(self) -> str:
        params = [p for p, _ in self.params_and_args()]
        params += [f"{c}: tl.constexpr" for c in self._constexprs()]
        lines = ["@triton.jit", f"def {self.name}("]
        lines += [f"    {p}," for p in params]
        lines.append("):")
        lines.append(f'    """{self.doc}"""')
        lines += [f"    {line}" if line else "" for line in self.body.lines]
        return "\n".join(lines) + "\n"

    def launch(self, grid: str, constexpr_values: dict[str, str], num_warps: str) -> list[str]:
        args = [a for _, a in self.params_and_args()]
        first_tensor = next(iter(self.body.tensor_args.values()))[0]
        values = {
            **constexpr_values,
            "BITWISE_ROUNDING": f"not {first_tensor}.is_cuda",
            "ON_GPU": f"{first_tensor}.is_cuda",
        }
        args += [f"{c}={values[c]}" for c in self._constexprs()]
        args.append(f"num_warps={num_warps}")
        lines = [f"{self.name}[{grid}]("]
        lines += [f"    {a}," for a in args]
        lines.append(")")
        return lines
