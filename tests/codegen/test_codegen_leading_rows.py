"""An op traced on [T, hidden] also runs on [batch, seqlen, hidden] (gpt-fast, litgpt and
torchtitan call their norms so): the launcher flattens the extra leading dims into rows and
gives them back to the outputs, at the traced rank it is the traced launcher itself; where the
graph mixes rows (a scan or reduction along them, rows folded into another dim) there is no
such launcher."""

from pathlib import Path

import pytest
import torch

from kbot.problem import load_problem
from kbot.problem.runtime import import_file, init_inputs
from kbot.propose.codegen import generate

PROBLEMS = Path(__file__).parent / "problems"


@pytest.mark.parametrize(
    "name, shapes",
    [
        ("norm_add_rmsnorm", [(2, 3, 256), (2, 3, 256)]),  # two outputs, both with the rows
        ("norm_rmsnorm_bf16", None),
    ],
)
def test_more_leading_dims_are_more_rows(load_candidate, name, shapes):
    problem = PROBLEMS / f"{name}.py"
    source = generate(load_problem(problem))[0].source
    kernel = load_candidate(source)
    assert "_rows(" in source
    module = import_file(problem)
    torch.manual_seed(0)
    model = module.Model(*init_inputs(module))
    ours = kernel.ModelNew(*init_inputs(module))
    ours.load_state_dict(model.state_dict())
    if shapes is None:
        traced = module.get_inputs(**load_problem(problem).cases[0])
        shapes = [(2, 3, *t.shape[1:]) for t in traced]
        dtypes = [t.dtype for t in traced]
    else:
        dtypes = [torch.bfloat16] * len(shapes)
    inputs = [torch.randn(s, dtype=d) for s, d in zip(shapes, dtypes)]
    with torch.no_grad():
        want, got = model(*inputs), ours(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(want, got):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("name", ["scan_cumprod_dim0", "cat_rows_dim0"])
def test_an_op_that_mixes_rows_keeps_its_traced_rank(name):
    source = generate(load_problem(PROBLEMS / f"{name}.py"))[0].source
    assert "_rows(" not in source
