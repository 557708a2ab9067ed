import io
import json

from kbot.search.progress import JsonLinesProgress, LineProgress, Snapshot, progress_for


def _snapshot(**overrides):
    values = dict(generation=0, generations=3, evaluated=4, accepted=2, best_speedup=1.3,
                  best_roofline_fraction=0.61, best_fitness="1.30x vs torch.compile",
                  eta_s=130.0, elapsed_s=20.0, last_sha256="ab" * 32, last_proposer="tune",
                  last_accepted=True)  # fmt: skip
    values.update(overrides)
    return Snapshot(**values)


def test_json_lines_are_one_parseable_object_per_event():
    stream = io.StringIO()
    progress = JsonLinesProgress(stream)
    progress.started("run-1", "rmsnorm", "cpu")
    progress.verdict(_snapshot())
    progress.finished("done")
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["started", "verdict", "finished"]
    assert events[1]["best_roofline_fraction"] == 0.61 and events[1]["eta_s"] == 130.0


def test_plain_lines_for_logs_show_the_state_per_generation():
    stream = io.StringIO()
    progress = LineProgress(stream)
    progress.started("run-1", "rmsnorm", "cpu")
    progress.generation_started(0, 3)
    progress.verdict(_snapshot())
    progress.generation_started(1, 3)
    progress.finished("winner")
    text = stream.getvalue()
    assert "generation 2/3" in text and "roofline 61%" in text and "ETA 2.2 min" in text
    assert text.rstrip().endswith("winner")


def test_progress_kind_follows_json_flag_and_terminal():
    assert isinstance(progress_for(True, io.StringIO()), JsonLinesProgress)
    assert isinstance(progress_for(False, io.StringIO()), LineProgress)


def test_rich_panel_renders_the_live_table_on_a_terminal():
    from rich.console import Console

    from kbot.search.progress import RichProgress

    stream = io.StringIO()
    console = Console(file=stream, force_terminal=True, width=200, color_system=None)
    progress = RichProgress(console)
    progress.started("run-1", "rmsnorm", "NVIDIA H200")
    progress.generation_started(0, 3)
    progress.verdict(_snapshot())
    progress.note("codegen: [mismatch] case 1")
    progress.finished("winner: 1.30x")
    text = stream.getvalue()
    assert "1.30x vs torch.compile" in text and "61%" in text and "2.2 min" in text
    assert "[mismatch]" in text and "winner: 1.30x" in text
