"""`kbot eval`: exit codes 0/1/2, JSON envelope with the verdict, text with the reasons."""

import json

from kbot.cli import main


def test_accepted_candidate_exits_0_with_a_json_verdict(paths, capsys):
    code = main(
        [
            "eval",
            str(paths / "problems" / "gelu_fp32.py"),
            str(paths / "candidates" / "quick_gelu.py"),
            "--device",
            "cpu",
            "--json",
        ]
    )
    envelope = json.loads(capsys.readouterr().out)
    assert code == 0 and envelope["ok"] and envelope["command"] == "eval"
    data = envelope["data"]
    assert data["accepted"] is True and data["stage"] == "done"
    assert data["cases"][0]["timing"] == "not timed (no GPU)"
    assert data["cases"][0]["correctness"]["trials"] == 5
    assert data["timed"] is False and data["speedup_geomean_vs_compile"] is None


def test_rejected_candidate_exits_1_and_names_the_rule_and_line(paths, capsys):
    code = main(
        [
            "eval",
            str(paths / "problems" / "gelu_fp32.py"),
            str(paths / "candidates" / "cheat_try_except_fallback.py"),
            "--device",
            "cpu",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "REJECTED at static" in out and "[try-except-fallback] (line 17)" in out


def test_missing_candidate_is_bad_input(paths, capsys):
    code = main(["eval", str(paths / "problems" / "gelu_fp32.py"), "nope.py", "--json"])
    envelope = json.loads(capsys.readouterr().out)
    assert code == 2 and "does not exist" in envelope["error"]


def test_malformed_problem_is_bad_input(tmp_path, paths, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("def get_inputs():\n    return []\n")
    code = main(["eval", str(bad), str(paths / "candidates" / "quick_gelu.py")])
    assert code == 2 and "missing Model" in capsys.readouterr().err


def test_too_few_seeds_is_bad_input(paths, capsys):
    code = main(
        [
            "eval",
            str(paths / "problems" / "gelu_fp32.py"),
            str(paths / "candidates" / "quick_gelu.py"),
            "--seeds",
            "2",
        ]
    )
    assert code == 2 and "at least 5" in capsys.readouterr().err


def test_bad_gpu_list_is_bad_input(paths, capsys):
    code = main(
        [
            "eval",
            str(paths / "problems" / "gelu_fp32.py"),
            str(paths / "candidates" / "quick_gelu.py"),
            "--gpus",
            "zero",
        ]
    )
    assert code == 2 and "--gpus" in capsys.readouterr().err


def test_cuda_asked_for_on_a_machine_without_one_is_bad_input(paths, monkeypatch, capsys):
    import torch

    import kbot.evaluate

    def no_evaluation(*args, **kwargs):
        raise AssertionError("nothing is evaluated without the device asked for")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(kbot.evaluate, "Evaluator", no_evaluation)
    code = main(
        [
            "eval",
            str(paths / "problems" / "gelu_fp32.py"),
            str(paths / "candidates" / "quick_gelu.py"),
            "--device",
            "cuda",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "--device cuda: no CUDA GPU is visible; use --device cpu" in err[0]
