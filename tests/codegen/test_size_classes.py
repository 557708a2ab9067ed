"""Launch by batch size (codegen/size_classes.py): a candidate with a decode launch up to
DECODE_MAX_ROWS rows and the prefill launch above, each with its own kernels and tunables.
On the CPU: offered first for each family where the problem has cases of several sizes
(second with one case), accepted by the evaluator with cases on both sides
of the threshold, each branch matching eager on its own, and tuned apart by `tune`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.problem.runtime import import_file
from kbot.propose.codegen import generate
from kbot.propose.codegen.emitted import Emitted, Tunable
from kbot.propose.codegen.size_classes import DECODE_MAX_ROWS, _rename, by_batch_size
from kbot.propose.codegen.trace import Unsupported
from kbot.propose.tune import find_tunables, neighbours

# Cases below and above DECODE_MAX_ROWS (64): both branches run in every evaluation.
CASES = "CASES = [dict(T=2), dict(T=70)]"
PROBLEMS = {
    "gated_silu": (
        "import torch.nn.functional as F\n",
        "        a, b = x.chunk(2, dim=-1)\n        return F.silu(a) * b\n",
        "torch.randn(T, 2 * 1280, dtype=torch.bfloat16)",
        "pointwise r1 b1024 w4 up to 64 rows, else pointwise r1 b2048 w8",
    ),
    "rmsnorm": (
        "",
        "        var = x.float().pow(2).mean(-1, keepdim=True)\n"
        "        return (x.float() * torch.rsqrt(var + 1e-6)).to(x.dtype)\n",
        "torch.randn(T, 4096, dtype=torch.bfloat16)",
        "one pass r1 w4 up to 64 rows, else one pass r1 w8",
    ),
    "log_softmax_wide": (
        "",
        "        return torch.log_softmax(x.float(), dim=-1)\n",
        "torch.randn(T, 16384, dtype=torch.bfloat16) * 3",
        "split 128 b1024 w4 up to 64 rows, else one pass r1 w16",
    ),
    "moe_sum": (
        "",
        "        return x.sum(dim=1)\n",
        "torch.randn(T, 4, 2048, dtype=torch.bfloat16)",
        "tiled one pass b512 w2 up to 64 rows, else tiled one pass b2048 w4",
    ),
}


def _problem(tmp_path: Path, name: str) -> Path:
    imports, body, inputs, _ = PROBLEMS[name]
    path = tmp_path / f"{name}.py"
    path.write_text(
        f"import torch\nimport torch.nn as nn\n{imports}\n{CASES}\n\n\n"
        f"class Model(nn.Module):\n    def forward(self, x):\n{body}\n\n"
        f"def get_inputs(T):\n    return [{inputs}]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    return path


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvalOptions(device="cpu")) as ev:
        yield ev


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_the_first_variant_launches_by_batch_size_and_is_accepted(name, tmp_path, evaluator):
    spec = load_problem(_problem(tmp_path, name))
    candidates = generate(spec)
    composite = candidates[0]
    assert composite.note.split(": ", 1)[1] == PROBLEMS[name][3]
    source = composite.source
    assert "if n_rows <= DECODE_MAX_ROWS:" in source or "if n_outer <= DECODE_MAX_ROWS:" in source
    assert f"DECODE_MAX_ROWS = {DECODE_MAX_ROWS}" in source
    assert f"_{name}_decode_" in source and f"def _{name}_kernel(" in source
    assert composite.params["decode_max_rows"] == DECODE_MAX_ROWS
    assert composite.params["decode"]["schedule"] == composite.params["schedule"]
    verdict = evaluator.evaluate(spec, source)
    assert verdict.accepted, [str(r) for r in verdict.reasons]


@pytest.mark.parametrize("name", ["gated_silu", "log_softmax_wide"])
def test_each_branch_matches_eager_on_its_own(name, tmp_path, load_candidate, device):
    """The threshold moved to 0 and to 1000 rows: the prefill and the decode launch each serve
    both sizes correctly, so the branch taken is a matter of speed only."""
    path = _problem(tmp_path, name)
    model = import_file(path).Model().to(device)
    module = load_candidate(generate(load_problem(path))[0].source)
    for threshold in (0, 1000):
        module.DECODE_MAX_ROWS = threshold
        for rows in (2, 70):
            torch.manual_seed(rows)
            x = torch.randn(rows, *PROBLEMS_SHAPES[name], dtype=torch.bfloat16).to(device)
            got = module.ModelNew().to(device)(x)
            torch.testing.assert_close(got, model(x), atol=2e-2, rtol=2e-2)


PROBLEMS_SHAPES = {"gated_silu": (2560,), "log_softmax_wide": (16384,)}


def test_the_split_launch_gives_each_row_fewer_programs_as_rows_grow(
    tmp_path, load_candidate, device
):
    """SPLITS programs a row while the launch stays within TOTAL_SPLITS programs, halved past
    it (on the H100, 128 a row at 64 rows made 8192 programs and lost to torch.compile); the
    result does not depend on how many."""
    path = _problem(tmp_path, "log_softmax_wide")
    model = import_file(path).Model().to(device)
    module = load_candidate(generate(load_problem(path))[0].source)
    assert (module.DECODE_SPLITS, module.DECODE_TOTAL_SPLITS) == (128, 512)
    module.DECODE_TOTAL_SPLITS = 256
    kernel = module._log_softmax_wide_decode_kernel
    grids = []

    class Recorder:
        def __getitem__(self, grid):
            grids.append(grid)
            return kernel[grid]

    module._log_softmax_wide_decode_kernel = Recorder()
    for rows in (1, 2, 3, 8):
        torch.manual_seed(rows)
        x = (torch.randn(rows, 16384, dtype=torch.bfloat16) * 3).to(device)
        got = module.ModelNew().to(device)(x)
        torch.testing.assert_close(got, model(x), atol=2e-2, rtol=2e-2)
    assert grids == [(1, 128), (2, 128), (3, 64), (8, 32)]


def test_tune_mutates_the_decode_launch_apart_from_the_prefill_one(tmp_path):
    spec = load_problem(_problem(tmp_path, "log_softmax_wide"))
    tunables = {t.name: t for t in find_tunables(generate(spec)[0].source)}
    assert tunables["DECODE_MAX_ROWS"].kind == "rows"
    assert tunables["DECODE_SPLITS"].kind == "splits"
    assert neighbours(tunables["DECODE_TOTAL_SPLITS"]) == [128, 256, 1024, 2048]
    assert tunables["DECODE_NUM_WARPS"].kind == "warps"
    assert tunables["DECODE_BLOCK_N"].kind == "block"
    assert tunables["NUM_WARPS"].kind == "warps" and tunables["ROWS_PER_PROGRAM"].kind == "rows"


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_with_one_case_the_plain_variant_stays_first(name, tmp_path):
    """A problem of one size (a KernelBench file) has no decode and prefill batches to tell
    apart: the composite stays second, behind the variant it launches above the threshold."""
    path = _problem(tmp_path, name)
    path.write_text(path.read_text().replace(CASES, "CASES = [dict(T=70)]"))
    candidates = generate(load_problem(path))
    prefill = PROBLEMS[name][3].split(", else ")[1]
    assert candidates[0].note.split(": ", 1)[1] == prefill
    assert candidates[1].note.split(": ", 1)[1] == PROBLEMS[name][3]


def test_launcher_constants_are_renamed_but_kernel_keywords_keep_their_names():
    renamed = {"BLOCK_N": "DECODE_BLOCK_N", "NUM_WARPS": "DECODE_NUM_WARPS"}
    assert _rename("    BLOCK_N=BLOCK_N,", renamed) == "    BLOCK_N=DECODE_BLOCK_N,"
    assert _rename("num_warps=NUM_WARPS,", renamed) == "num_warps=DECODE_NUM_WARPS,"
    assert _rename("grid = (triton.cdiv(n, BLOCK_N),)", renamed) == (
        "grid = (triton.cdiv(n, DECODE_BLOCK_N),)"
    )
    assert _rename("ok = BLOCK_N == 4", renamed) == "ok = DECODE_BLOCK_N == 4"
    assert _rename("BLOCK_N_MAX + 1", renamed) == "BLOCK_N_MAX + 1"


def test_a_launcher_without_a_row_count_is_not_split_by_size():
    emitted = Emitted([], ["m = a.shape[0]", "grid = (m,)"], [Tunable("BLOCK_M", 64, "rows")])
    with pytest.raises(Unsupported, match="no row count"):
        by_batch_size(emitted, emitted)
