"""Problems that declare KBOT mutates_inputs: what the reference writes into its inputs is
checked like an output; inputs it leaves alone must still be unchanged."""

from pathlib import Path

from kbot.problem import load_problem


def test_a_faithful_in_place_candidate_is_accepted(evaluator, problem, candidate):
    verdict = evaluator.evaluate(problem("rotate_in_place"), candidate("rotate_in_place"))
    assert verdict.accepted, [str(r) for r in verdict.reasons]


def test_skipping_the_in_place_write_is_rejected(evaluator, problem, candidate, tmp_path):
    lazy = candidate("rotate_in_place").replace(
        "    tl.store(x_ptr + row * width + cols, scaled, mask=mask)\n", ""
    )
    verdict = evaluator.evaluate(problem("rotate_in_place"), lazy)
    assert not verdict.accepted
    assert verdict.reasons[0].rule == "mismatch", [str(r) for r in verdict.reasons]


def test_without_the_declaration_writing_into_inputs_is_a_cheat(
    evaluator, candidate, paths, tmp_path
):
    source = (Path(paths) / "problems" / "rotate_in_place.py").read_text()
    undeclared = tmp_path / "rotate_undeclared.py"
    undeclared.write_text(source.replace("KBOT = dict(mutates_inputs=True)\n", ""))
    verdict = evaluator.evaluate(load_problem(undeclared), candidate("rotate_in_place"))
    assert not verdict.accepted
    assert verdict.reasons[0].rule == "input-mutated", [str(r) for r in verdict.reasons]
