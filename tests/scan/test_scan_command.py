import json

from kbot.cli import main


def test_scan_text_table_and_exit_0(engine_tree, capsys):
    assert main(["scan", str(engine_tree)]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header == ["#", "op", "location", "kind", "time", "cases", "status"]
    assert "gemma_rms_norm" in out and "engine/layers/norm.py:25" in out
    assert "not scanned: engine/broken.py: syntax error" in out


def test_scan_json_has_one_matrix_entry_per_target(engine_tree, capsys):
    assert main(["scan", str(engine_tree), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["command"] == "scan" and payload["exit_code"] == 0
    data = payload["data"]
    targets = [f for f in data["findings"] if f["status"] == "target"]
    include = data["matrix"]["include"]
    assert len(include) == len(targets) and len({e["name"] for e in include}) == len(include)
    gemma = next(e for e in include if e["name"] == "gemma_rms_norm")
    assert gemma["target"] == "engine/layers/norm.py::GemmaRMSNorm" and gemma["kind"] == "custom_op"
    assert [f["rank"] for f in data["findings"]] == list(range(1, len(data["findings"]) + 1))
    assert {s["file"] for s in data["file_skips"]} == {"engine/broken.py", "engine/latin1.py"}


def test_scan_nothing_found_exits_1(tmp_path, capsys):
    (tmp_path / "plain.py").write_text("def f(x):\n    return x\n")
    assert main(["scan", str(tmp_path)]) == 1
    assert "no targets found" in capsys.readouterr().out


def test_scan_bad_input_exits_2(tmp_path, capsys):
    assert main(["scan", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["scan", str(tmp_path), "--top", "0"]) == 2


def test_scan_reads_kbot_yml(engine_tree, capsys):
    (engine_tree / ".kbot.yml").write_text(
        "version: 1\n"
        "targets:\n"
        "  - target: engine/layers/norm.py::GemmaRMSNorm.forward\n"
        "    name: gemma\n"
        "    init: {hidden_size: 64}\n"
        "scan:\n"
        "  compile_decorators: [safe_torch_compile]\n"
        "  exclude: ['engine/backends/**']\n"
    )
    assert main(["scan", str(engine_tree), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    names = {f["name"] for f in data["findings"]}
    assert "gemma" in names and "rotate_half" in names
    assert not any(f["kind"] == "default_backend" for f in data["findings"])


def test_kbot_s_work_dir_inside_the_tree_is_not_scanned(engine_tree, capsys):
    # kbot run clones the repository into <work_dir>/publish/repo: a later scan listed its ops.
    clone = engine_tree / "kbot-work" / "publish" / "repo"
    clone.mkdir(parents=True)
    (clone / "norm_copy.py").write_text((engine_tree / "engine/layers/norm.py").read_text())
    (engine_tree / ".kbot.yml").write_text("version: 1\nwork_dir: kbot-work\n")
    assert main(["scan", str(engine_tree), "--json"]) == 0
    files = {f["file"] for f in json.loads(capsys.readouterr().out)["data"]["findings"]}
    assert files and not any(f.startswith("kbot-work/") for f in files)


def test_a_work_dir_that_is_the_scanned_folder_is_refused(engine_tree, capsys):
    (engine_tree / ".kbot.yml").write_text("version: 1\nwork_dir: .\n")
    assert main(["scan", str(engine_tree)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("such as .kbot") and ".kbot.yml:2: work_dir is the scanned folder" in err
    assert "\n" not in err
