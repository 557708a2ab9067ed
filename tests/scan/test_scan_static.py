from pathlib import Path

import pytest

from kbot.errors import ConfigError, UsageError
from kbot.scan import Flag, Kind, ScanOptions, Status, TargetHint, scan

OPTIONS = ScanOptions(compile_decorators=("safe_torch_compile",))


def by_qualname(result):
    out = {}
    for finding in result.findings:
        out.setdefault(finding.qualname, finding)
    return out


def test_op_base_generations_are_recognised_by_names(engine_tree):
    found = by_qualname(scan(engine_tree, OPTIONS))
    assert (
        found["GemmaRMSNorm"].kind == Kind.CUSTOM_OP and found["GemmaRMSNorm"].op_base == "CustomOp"
    )
    assert (
        found["SiluAndMul"].kind == Kind.CUSTOM_OP
        and found["SiluAndMul"].op_base == "MultiPlatformOp"
    )
    assert found["FusedAddRMSNorm"].kind == Kind.FUSED_OP
    assert found["FusedAddRMSNorm"].op_base == "BaseFusedOp"
    # Abstract bases are plumbing, not ops.
    assert not {"CustomOp", "MultiPlatformOp", "BaseFusedOp"} & set(found)
    assert found["GemmaRMSNorm"].entry == "forward_native"
    assert "def forward_native(self, x: torch.Tensor)" in found["GemmaRMSNorm"].reference_source
    assert [p.name for p in found["GemmaRMSNorm"].params] == ["x"]
    assert [(p.name, p.default) for p in found["GemmaRMSNorm"].init_params] == [
        ("hidden_size", None),
        ("eps", "1e-06"),
    ]


def test_fast_path_is_skipped_and_delegation_is_a_target(engine_tree):
    found = by_qualname(scan(engine_tree, OPTIONS))
    rms = found["RMSNorm"]
    assert rms.has_fast_path and rms.status == Status.SKIPPED
    assert "forward_cuda calls torch.ops.engine.rms_norm" in rms.skip_reason
    assert "--include-existing" in rms.skip_reason
    assert not found["GemmaRMSNorm"].has_fast_path  # forward_cuda returns forward_native(...)
    assert not found["GeluAndMul"].has_fast_path  # forward_cuda = forward_native
    assert not found["SiluAndMul"].has_fast_path  # inherits the base's delegating forward_cuda
    assert found["LogitSoftcap"].has_fast_path  # forward_triton does real work
    assert found["GemmaRMSNorm"].status == Status.TARGET


def test_include_existing_keeps_fast_path_ops(engine_tree):
    result = scan(engine_tree, ScanOptions(include_existing=True))
    found = by_qualname(result)
    assert found["RMSNorm"].status == Status.TARGET and found["RMSNorm"].has_fast_path


def test_default_backends_with_and_without_cuda_override(engine_tree):
    found = by_qualname(scan(engine_tree, OPTIONS))
    silu = found["DefaultSiluAndMulImpl"]
    assert silu.kind == Kind.DEFAULT_BACKEND and silu.status == Status.TARGET
    assert silu.op_base == "SiluAndMulImpl"
    norm = found["DefaultRMSNormImpl"]
    assert norm.has_fast_path and "TritonRMSNormImpl overrides RMSNormImpl" in norm.fast_path
    # Builders and the cuda overrides themselves are not targets.
    assert not {"DefaultRMSNormBuilder", "TritonRMSNormImpl"} & set(found)


def test_every_compile_spelling(engine_tree):
    found = by_qualname(scan(engine_tree, OPTIONS))
    compiled = {q: f.fast_path for q, f in found.items() if f.kind == Kind.TORCH_COMPILE}
    assert compiled == {
        "gelu_tanh": "compiled with @torch.compile",
        "softcap": "compiled with @torch.compile(dynamic=True)",
        "silu_mul": "compiled with @tc",
        "rotate_half": "compiled with @safe_torch_compile",
        "apply_rotary": "compiled with @safe_torch_compile(fullgraph=True)",
        "_plain_square": "compiled with torch.compile(_plain_square)",
    }
    assert "@" not in found["gelu_tanh"].reference_source  # decorators are not the reference


def test_project_compile_decorator_needs_configuring(engine_tree):
    found = by_qualname(scan(engine_tree, ScanOptions()))
    assert "rotate_half" not in found and "gelu_tanh" in found


def test_stochastic_ops_are_skipped_with_a_reason(engine_tree):
    sampler = by_qualname(scan(engine_tree, OPTIONS))["Sampler"]
    assert sampler.has_flag(Flag.STOCHASTIC) and sampler.status == Status.SKIPPED
    assert "exponential_" in sampler.skip_reason and "include_stochastic" in sampler.skip_reason
    again = by_qualname(scan(engine_tree, ScanOptions(include_stochastic=True)))["Sampler"]
    assert again.status == Status.TARGET


def test_in_place_and_view_semantics_are_recorded(engine_tree):
    found = by_qualname(scan(engine_tree, OPTIONS))
    fused = found["FusedAddRMSNorm"]
    assert fused.has_flag(Flag.IN_PLACE) and fused.has_flag(Flag.RETURNS_VIEW)
    assert any("residual.add_" in n.reason for n in fused.flags)
    assert found["split_heads"].kind == Kind.MARKER
    assert found["split_heads"].has_flag(Flag.RETURNS_VIEW)
    assert not found["split_heads"].has_flag(Flag.IN_PLACE)
    assert found["scale_"].has_flag(Flag.IN_PLACE)
    assert not found["GemmaRMSNorm"].flags  # x = x.float() then arithmetic: a new tensor


def test_out_argument_is_in_place(tmp_path):
    (tmp_path / "ops.py").write_text(
        "import torch\n\n\n# kbot: optimize\ndef add_into(a, b, out):\n    return torch.add(a, b, out=out)\n"
    )
    (finding,) = scan(tmp_path).findings
    assert finding.has_flag(Flag.IN_PLACE) and "out=" in finding.flags[0].reason


def test_broken_files_are_reported_and_skipped(engine_tree):
    result = scan(engine_tree, OPTIONS)
    reasons = {s.file: s.reason for s in result.file_skips}
    assert reasons["engine/broken.py"].startswith("syntax error at line 2")
    assert reasons["engine/latin1.py"].startswith("not UTF-8 text")
    assert result.targets  # the rest of the tree was scanned


def test_exclude_globs(engine_tree):
    result = scan(engine_tree, ScanOptions(exclude=("engine/backends/**", "engine/compiled.py")))
    kinds = {f.kind for f in result.findings}
    assert Kind.DEFAULT_BACKEND not in kinds and Kind.TORCH_COMPILE not in kinds


def test_config_targets_merge_with_patterns_and_may_repeat(engine_tree):
    hints = (
        TargetHint(
            "engine/layers/norm.py::GemmaRMSNorm.forward", name="gemma", init={"hidden_size": 64}
        ),
        TargetHint(
            "engine/layers/norm.py::GemmaRMSNorm.forward",
            name="gemma_wide",
            init={"hidden_size": 128},
        ),
        TargetHint("engine.layers.activation:SiluAndMul", skip=True),
        TargetHint("engine/layers/norm.py::RMSNorm.forward_native", name="rms"),
    )
    result = scan(engine_tree, ScanOptions(targets=hints))
    names = {f.name: f for f in result.findings}
    assert (
        names["gemma"].kind == Kind.CUSTOM_OP and Kind.CONFIG_TARGET in names["gemma"].also_found_as
    )
    assert names["gemma"].entry == "forward_native" and names["gemma_wide"].hint.init == {
        "hidden_size": 128
    }
    silu = next(f for f in result.findings if f.qualname == "SiluAndMul")
    assert silu.status == Status.SKIPPED and "skip: true" in silu.skip_reason
    # Naming an op in .kbot.yml asks for it even though it has a fast path.
    assert names["rms"].status == Status.TARGET and names["rms"].has_fast_path


def test_a_single_file_scan_applies_the_kbot_yml_entries_of_that_file(engine_tree):
    # Scanning the file alone once listed the op twice: its skip entry, and the op unskipped.
    hints = (TargetHint("engine/layers/activation.py::SiluAndMul", skip=True),)
    path = engine_tree / "engine" / "layers" / "activation.py"
    result = scan(path, ScanOptions(targets=hints), config_root=engine_tree)
    silu = [f for f in result.findings if f.qualname == "SiluAndMul"]
    assert len(silu) == 1 and silu[0].status == Status.SKIPPED, silu


def test_config_target_that_does_not_exist_is_a_config_error(engine_tree):
    with pytest.raises(ConfigError, match="no class or function Nope"):
        scan(engine_tree, ScanOptions(targets=(TargetHint("engine/layers/norm.py::Nope"),)))
    with pytest.raises(ConfigError, match="file engine/none.py not found"):
        scan(engine_tree, ScanOptions(targets=(TargetHint("engine/none.py::X"),)))


def test_marker_placements(tmp_path):
    (tmp_path / "m.py").write_text(
        "import torch\n\n"
        "# kbot: optimize\n# (a note)\n\n@staticmethod\ndef above(x):\n    return x * 2\n\n\n"
        "def trailing(x):  # kbot: optimize\n    return x + 1\n\n\n"
        "# kbot: optimize\nx = 1\n\n\ndef not_marked(x):\n    return x\n\n\n"
        "class Op(torch.nn.Module):  # KBOT: Optimize\n    def forward(self, x):\n        return x.exp()\n"
    )
    found = {f.qualname: f for f in scan(tmp_path).findings}
    assert set(found) == {"above", "trailing", "Op"}
    assert found["Op"].entry == "forward" and found["Op"].kind == Kind.MARKER


def test_missing_path_is_usage_error(tmp_path):
    with pytest.raises(UsageError):
        scan(tmp_path / "nope")


def test_tinyserve_patterns(tinyserve):
    from kbot.config import load_config
    from kbot.scan.findings import TargetHint

    config = load_config(tinyserve)
    options = ScanOptions(
        exclude=config.scan.exclude,
        compile_decorators=config.scan.compile_decorators,
        targets=tuple(TargetHint.from_config(t) for t in config.targets),
    )
    result = scan(tinyserve, options, config_root=config.root)
    assert not result.file_skips
    names = {f.name: f for f in result.findings}
    assert {"rmsnorm", "fused_add_rmsnorm", "gelu_tanh_and_mul", "rotary_neox"} <= set(names)
    assert names["rmsnorm"].kind == Kind.CUSTOM_OP and not names["rmsnorm"].has_fast_path
    assert any(f.kind == Kind.TORCH_COMPILE for f in result.findings)
    stochastic = [f for f in result.findings if f.has_flag(Flag.STOCHASTIC)]
    assert stochastic and all(f.status == Status.SKIPPED for f in stochastic)
    assert not any(Path(f.file).parts[0] == "tests" for f in result.findings)


def test_bases_in_files_without_trigger_words_are_followed(tmp_path):
    (tmp_path / "root_op.py").write_text(
        "class Root:\n    def forward_native(self, x):\n        raise NotImplementedError\n\n"
        "    def forward_triton(self, x):\n        return self.forward_native(x)\n"
    )
    (tmp_path / "middle.py").write_text(
        "from root_op import Root\n\n\nclass Middle(Root):\n    pass\n"
    )
    (tmp_path / "op.py").write_text(
        "from middle import Middle\n\n\nclass Op(Middle):\n    def forward_native(self, x):\n        return x * 2\n"
    )
    (tmp_path / "plain.py").write_text("def helper(x):\n    return x\n")
    result = scan(tmp_path)
    (op,) = result.findings
    assert op.kind == Kind.FUSED_OP and op.op_base == "Middle"
    assert result.files_scanned == 4


def test_byte_order_mark_is_fine(tmp_path):
    (tmp_path / "bom.py").write_bytes(
        b"\xef\xbb\xbf# kbot: optimize\ndef f(x):\n    return x * 2\n"
    )
    result = scan(tmp_path)
    assert not result.file_skips and [f.qualname for f in result.findings] == ["f"]


def test_named_backend_methods_count_as_fast_paths(tmp_path):
    (tmp_path / "ops.py").write_text(
        "class BaseFusedOp:\n"
        "    def forward_native(self, x):\n        raise NotImplementedError\n\n"
        "    def forward_triton(self, x):\n        return self.forward_native(x)\n\n\n"
        "class NormOp(BaseFusedOp):\n"
        "    def forward_native(self, x):\n        return x * 2\n\n"
        "    def forward_aot(self, x):\n        import sgl_kernel\n\n        return sgl_kernel.rmsnorm(x)\n\n"
        "    def forward_npu(self, x):\n        return npu_norm(x)\n"
    )
    (op,) = scan(tmp_path).findings
    assert op.has_fast_path and op.fast_path == "forward_aot calls sgl_kernel.rmsnorm (line 16)"
