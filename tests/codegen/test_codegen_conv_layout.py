"""A convolution with a pointwise epilogue is offered, second, with the convolution in
channels-last (torch.compile's layout for small convolutions): the launcher makes the input and
weight channels-last and the epilogue reads the result by its strides. Transposed convolutions
and reductions after a convolution keep NCHW only. That every variant is accepted by the
evaluator is test_codegen_candidates.py's job."""

from pathlib import Path

import torch

from kbot.problem import load_problem
from kbot.problem.runtime import import_file, init_inputs
from kbot.propose.codegen import generate

PROBLEMS = Path(__file__).parent / "problems"


def _notes_and_sources(name: str) -> list[tuple[str, str]]:
    return [(c.note, c.source) for c in generate(load_problem(PROBLEMS / f"{name}.py"))]


def test_conv2d_and_conv3d_epilogues_get_a_channels_last_variant_second():
    for name, layout in (
        ("conv2d_bias_relu_extern", "torch.channels_last)"),
        ("conv3d_relu_hardswish_extern", "torch.channels_last_3d)"),
    ):
        variants = _notes_and_sources(name)
        assert "channels-last" in variants[1][0], [n for n, _ in variants]
        assert f"memory_format={layout}" in variants[1][1]
        assert "the last fastest." in variants[1][1]  # channels vary fastest along the rows
        assert sum("channels_last" in source for _, source in variants) == 1


def test_transposed_convolutions_keep_their_layout():
    for name in ("conv_transpose2d_tanh_extern", "conv_transpose1d_grouped_extern"):
        assert not any("channels_last" in source for _, source in _notes_and_sources(name))


def test_the_channels_last_variant_matches_the_reference_on_the_cpu(tmp_path):
    path = PROBLEMS / "conv3d_relu_hardswish_extern.py"
    spec = load_problem(path)
    source = next(c.source for c in generate(spec) if "channels_last" in c.source)
    kernel_file = tmp_path / "channels_last_kernel.py"
    kernel_file.write_text(source, encoding="utf-8")
    module, kernel = import_file(path), import_file(kernel_file)
    torch.manual_seed(0)
    model = module.Model(*init_inputs(module))
    ours = kernel.ModelNew(*init_inputs(module))
    ours.load_state_dict(model.state_dict())
    x = torch.randn(2, 3, 5, 6, 7)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), model(x), atol=1e-5, rtol=1e-5)
