"""What a judged kernel may not do although Triton's language allows it
(kbot.evaluate.kernel_escapes): cast a pointer to an integer, or run inline asm beyond
arithmetic on its operands. The asm strings are read in the source, and a GPU launch's
compiled TTIR is read again (here compiled for sm_90 on the CPU, as the GPU would)."""

import ast
import textwrap

import pytest

from kbot.evaluate import kernel_escapes
from kbot.evaluate.kernel_escapes import asm_refusal, ttir_refusal

CODEGEN_ASM = "cvt.rn.bf16.f32 $0, $1;"


@pytest.mark.parametrize(
    "asm",
    [
        CODEGEN_ASM,
        "cvt.rn.f16.f32 $0, $1;",
        "{ .reg .pred p; setp.gt.f32 p, $1, 0f00000000; selp.f32 $0, $1, 0f00000000, p; }",
        "tanh.approx.f32 $0, $1;",
        "@$2 fma.rn.f32 $0, $1, $1, $1;",
        "mov.b32 {$0, $1}, $2;\n prmt.b32 $0, $0, 0, 0x3210;",
    ],
)
def test_arithmetic_on_operands_passes(asm):
    assert asm_refusal(asm) is None


@pytest.mark.parametrize(
    "asm,said",
    [
        ("mov.u64 $0, %globaltimer;", "%globaltimer"),
        ("mov.u32 $0, %clock;", "%clock"),
        ("mov.u32 $0, %smid;", "%smid"),
        ("ld.global.f32 $0, [$1];", "ld.global.f32"),
        ("st.global.f32 [$1], $2;", "st.global.f32"),
        ("atom.global.add.f32 $0, [$1], $2;", "atom.global.add.f32"),
        ("L1: bra L1;", "L1:"),
        ("nanosleep.u32 1000;", "nanosleep.u32"),
        (".shared .b32 s; mov.b32 $0, $1;", ".shared"),
    ],
)
def test_memory_time_and_control_flow_are_refused(asm, said):
    why = asm_refusal(asm)
    assert why is not None and said in why


def test_ttir_with_a_pointer_cast_or_a_pointer_to_asm_is_refused():
    cast = "    %a = tt.ptr_to_int %x_ptr : !tt.ptr<f32> -> i64 loc(#loc16)"
    assert ttir_refusal(cast) == ("address-use", kernel_escapes.PTR_TO_INT)
    handed = (
        '    %b = tt.elementwise_inline_asm "mov.b64 $0, $1;" {constraints = "=l,l", '
        "packed_element = 1 : i32, pure = true} %p : tensor<128x!tt.ptr<f32>> -> tensor<128xi64>"
    )
    assert ttir_refusal(handed)[0] == "address-use"
    clock = (
        '    %c = tt.elementwise_inline_asm "add.f32 $0, $1, $1;\\0A mov.u64 $0, %globaltimer;" '
        '{constraints = "=l,r", packed_element = 1 : i32, pure = false} %x : tensor<128xf32> '
        "-> tensor<128xi64>"
    )
    assert ttir_refusal(clock) == (
        "kernel-code",
        "inline asm reads the special register `%globaltimer`",
    )
    fine = (
        f'    %d = tt.elementwise_inline_asm "{CODEGEN_ASM}" {{constraints = "=h,r", '
        "packed_element = 1 : i32, pure = true} %x : tensor<128xf32> -> tensor<128xbf16>"
    )
    assert ttir_refusal(fine) is None


KERNELS = """
import triton
import triton.language as tl


@triton.jit
def cast(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    page = (x_ptr.to(tl.int64) >> 12) % 1024
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * (page != 0).to(tl.float32))


@triton.jit
def rounded(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise(
        "cvt.rn.bf16.f32 $0, $1;", "=h,r", [x], dtype=tl.bfloat16, is_pure=True, pack=1
    )
    tl.store(out_ptr + offs, y.to(tl.float32))
"""


def test_the_compiled_kernels_ttir_says_what_the_kernel_does(tmp_path, monkeypatch):
    """Triton's own TTIR, compiled for sm_90 without a GPU: the pointer cast is found, the
    codegen rounding passes."""
    import importlib.util

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    path = tmp_path / "escape_kernels.py"
    path.write_text(KERNELS)
    spec = importlib.util.spec_from_file_location("escape_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def compiled(fn):
        source = ASTSource(
            fn=fn,
            signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "BLOCK": "constexpr"},
            constexprs={"BLOCK": 128},
        )
        try:
            return triton.compile(source, target=GPUTarget("cuda", 90, 32))
        except Exception as exc:  # noqa: BLE001 - a Triton built without the CUDA backend
            pytest.skip(f"cannot compile for sm_90 here: {exc}")

    assert kernel_escapes.compiled_refusal(compiled(module.cast))[0] == "address-use"
    assert kernel_escapes.compiled_refusal(compiled(module.rounded)) is None
    assert kernel_escapes.compiled_refusal(None) is None  # the interpreter's launch


def _static(body: str) -> list[str]:
    source = textwrap.dedent(
        f"""
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr):
            x = tl.load(x_ptr + tl.arange(0, BLOCK))
            {body}
        """
    )
    return [r.message for r in kernel_escapes.check(ast.parse(source))]


def test_the_source_spells_its_asm_as_a_literal_the_rules_pass():
    ok = 'y = tl.inline_asm_elementwise("cvt.rn.bf16.f32 $0, $1;", "=h,r", [x], dtype=tl.bfloat16, is_pure=True, pack=1)'
    assert _static(ok) == []
    clock = 'y = tl.inline_asm_elementwise(asm="mov.u64 $0, %globaltimer;", constraints="=l,r", args=[x], dtype=tl.int64, is_pure=False, pack=1)'
    assert "%globaltimer" in _static(clock)[0]
    built = 'y = tl.inline_asm_elementwise("mov.u64 $0, " + "%glo" + "baltimer;", "=l,r", [x], dtype=tl.int64, is_pure=False, pack=1)'
    assert "string literal" in _static(built)[0]
    kept = "f = tl.inline_asm_elementwise"
    assert "named other than in a call" in _static(kept)[0]
