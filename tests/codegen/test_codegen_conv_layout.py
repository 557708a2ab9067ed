"""A 2-d or 3-d convolution, transposed or not, with a pointwise epilogue is offered, second,
with the convolution in channels-last (torch.compile's layout for small convolutions): the
launcher makes the input and weight channels-last and the epilogue reads the result by its
strides; first where the convolution is the whole op. 1-d convolutions and reductions after a
convolution keep NCHW only. That every variant is accepted by the evaluator is
test_codegen_candidates.py's job."""

from pathlib import Path

import pytest
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


def test_transposed_convolutions_get_it_too_but_not_in_one_dim():
    variants = _notes_and_sources("conv_transpose2d_tanh_extern")
    assert "channels-last" in variants[1][0], [n for n, _ in variants]
    assert "conv_transpose2d(x.contiguous(memory_format=torch.channels_last), " in variants[1][1]
    assert not any(
        "channels_last" in source
        for _, source in _notes_and_sources("conv_transpose1d_grouped_extern")
    )


def test_a_bare_transposed_convolution_gets_channels_last_first():
    # The NCHW variant is then a copy after cuDNN, never faster than the reference.
    variants = _notes_and_sources("conv_transpose3d_grouped_bare_extern")
    assert "channels-last" in variants[0][0], [n for n, _ in variants]
    assert "memory_format=torch.channels_last_3d)" in variants[0][1]
    assert sum("channels_last" in source for _, source in variants) == 1


@pytest.mark.parametrize(
    "name, shape",
    [
        ("conv3d_relu_hardswish_extern", (2, 3, 5, 6, 7)),
        ("conv_transpose3d_grouped_bare_extern", (2, 4, 3, 4, 5)),
    ],
)
def test_the_channels_last_variant_matches_the_reference_on_the_cpu(tmp_path, name, shape):
    path = PROBLEMS / f"{name}.py"
    spec = load_problem(path)
    source = next(c.source for c in generate(spec) if "channels_last" in c.source)
    kernel_file = tmp_path / "channels_last_kernel.py"
    kernel_file.write_text(source, encoding="utf-8")
    module, kernel = import_file(path), import_file(kernel_file)
    torch.manual_seed(0)
    model = module.Model(*init_inputs(module))
    ours = kernel.ModelNew(*init_inputs(module))
    ours.load_state_dict(model.state_dict())
    x = torch.randn(*shape)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), model(x), atol=1e-5, rtol=1e-5)
