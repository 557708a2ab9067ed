import subprocess
import sys

from kbot import __version__
from kbot.cli import main


def test_version_flag_prints_version(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert __version__ in capsys.readouterr().out


def test_unknown_subcommand_is_one_line_and_exit_2(capsys):
    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid choice" in err[0]


def test_importing_kbot_does_not_import_torch():
    code = "import sys, kbot, kbot.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_work_dir_that_cannot_be_made_is_one_line_and_exit_2(tmp_path, capsys):
    problem = tmp_path / "p.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return x * 2\n\n\nCASES = [dict(T=2)]\n\n\n"
        "def get_inputs(T):\n    return [torch.randn(T, 8)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    (tmp_path / "afile").write_text("mine\n")
    work = tmp_path / "afile" / "wd"  # under a file: no folder can be made there
    code = main(["optimize", str(problem), "--work-dir", str(work), "--time-budget", "5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"cannot write {work}" in err[0] and "Not a directory" in err[0]
    assert (tmp_path / "afile").read_text() == "mine\n"


def test_a_closed_pipe_ends_quietly(tmp_path):
    (tmp_path / ".kbot.yml").write_text("version: 1\n")
    code = (
        "import subprocess, sys\n"
        f"p = subprocess.Popen([sys.executable, '-m', 'kbot', 'config', '--show', {str(tmp_path)!r}],"
        " stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
        "p.stdout.close()\n"
        "sys.stdout.write(p.stderr.read().decode())\n"
        "sys.exit(p.wait())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "Traceback" not in out.stdout and "BrokenPipeError" not in out.stdout, out.stdout


def test_an_export_never_writes_over_a_file_of_the_users(tmp_path, capsys):
    from kbot.search.store import Store

    with Store(tmp_path / "kbot.sqlite"):
        pass
    notes = tmp_path / "notes.txt"
    notes.write_text("DATA\n")
    args = ["trajectories", "export", "--work-dir", str(tmp_path), "--out", str(notes)]
    assert main(args) == 2
    assert "is not a kbot export" in capsys.readouterr().err
    assert notes.read_text() == "DATA\n"
    again = tmp_path / "sft.jsonl"
    assert main([*args[:-1], str(again)]) in (0, 1)  # a new file: written
    assert main([*args[:-1], str(again)]) in (0, 1)  # its own export: written over


def test_an_argument_error_has_one_kbot_prefix(capsys):
    assert main(["optimize", "--generations", "many"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "kbot: error: argument --generations: invalid int value: 'many' "
        "(see `kbot optimize --help`)"
    ]
    assert main(["config"]) == 2  # a command's own usage error: no `kbot config:` lead either
    assert capsys.readouterr().err.strip().splitlines() == [
        "kbot: error: `kbot config` has nothing to do; use `kbot config --show [PATH]`"
    ]


def test_the_result_reaches_the_stdout_the_command_began_with(monkeypatch, capsys):
    """A proposer's thread still running at the end (one a Ctrl-C abandoned) may hold
    sys.stdout redirected to a buffer; the result is printed where stdout was."""
    import io

    import kbot.commands.config as config_command
    from kbot.errors import ExitCode
    from kbot.output import CommandResult

    def redirected(args):
        monkeypatch.setattr(sys, "stdout", io.StringIO())
        return CommandResult(ExitCode.OK, "the result")

    monkeypatch.setattr(config_command, "run", redirected)
    assert main(["config", "--show"]) == 0
    assert capsys.readouterr().out == "the result\n"


def test_ctrl_c_in_any_command_is_one_line_and_exit_130(monkeypatch, capsys):
    import kbot.commands.config as config_command

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(config_command, "run", interrupted)
    assert main(["config", "--show"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kbot: interrupted; ")
    assert "run the same command again" in err[0]
