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
