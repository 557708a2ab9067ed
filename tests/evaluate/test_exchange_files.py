"""The judge's payload files live in a folder the candidate's process can write in: the judge
creates and reads them by name in the folder it opened before the process started, never
through a link, and never waits on a pipe. A link named `/proc/self/cwd/../x` resolves inside
the sandbox for the candidate (its audit hook let it make one) and outside it for the judge,
whose request once created `/tmp/kbot-redteam-cheat-exchange-*` that way
(tests/evaluate/redteam/reach_exchange_symlinks.py); a FIFO in place of a reply held the judge
in `open` for good."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import torch

from kbot.evaluate import wire
from kbot.evaluate.audit import Policy
from kbot.evaluate.remote import CandidateLost, CandidateProcess


@pytest.fixture
def exchange(tmp_path):
    folder = tmp_path / "exchange"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    yield folder, fd
    os.close(fd)


def _outbox(folder: Path, fd: int, name: str) -> wire.Outbox:
    outbox = wire.Outbox.at(folder / name, fd)
    wire.encode([torch.arange(6.0)], outbox)
    return outbox


def test_a_request_never_writes_through_a_planted_link(exchange, tmp_path):
    folder, fd = exchange
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file")
    (folder / "request.bin").symlink_to(victim)
    (folder / "dangling.bin").symlink_to(tmp_path / "created-outside.bin")
    for name in ("request.bin", "dangling.bin"):
        with pytest.raises(FileExistsError):
            _outbox(folder, fd, name).write()
    assert victim.read_text() == "the user's file"
    assert not (tmp_path / "created-outside.bin").exists()


def test_a_request_lands_in_the_folder_opened_first_even_when_it_was_swapped(exchange, tmp_path):
    folder, fd = exchange
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.rename(tmp_path / "moved")
    folder.symlink_to(elsewhere)  # the exchange's path now leads outside
    written = _outbox(folder, fd, "request-0.bin").write()
    assert Path(written) == folder / "request-0.bin"
    assert (tmp_path / "moved" / "request-0.bin").is_file()
    assert not any(elsewhere.iterdir())


def test_a_reply_is_a_regular_file_read_by_name_without_waiting(exchange, tmp_path):
    folder, fd = exchange
    outbox = _outbox(folder, fd, "reply-0.bin")
    encoded = wire.encode([torch.ones(3)], outbox)
    outbox.write()
    payload = wire.open_payload(fd, "reply-0.bin", 1 << 20)
    try:
        (back,) = wire.decode(encoded, payload, torch.device("cpu"))
    finally:
        os.close(payload)
    assert torch.equal(back, torch.ones(3))

    os.mkfifo(folder / "reply-1.bin")
    (folder / "reply-2.bin").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "secret.txt").write_text("kbot-canary-not-for-the-judge")
    (folder / "reply-3.bin").mkdir()
    outcomes: dict[str, str] = {}

    def open_each() -> None:
        for name in ("reply-1.bin", "reply-2.bin", "reply-3.bin"):
            try:
                os.close(wire.open_payload(fd, name, 1 << 20))
                outcomes[name] = "opened"
            except wire.WireError as exc:
                outcomes[name] = str(exc)

    reader = threading.Thread(target=open_each, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "the judge waited on a FIFO"
    assert "not a regular file" in outcomes["reply-1.bin"]
    assert "cannot be opened" in outcomes["reply-2.bin"]  # O_NOFOLLOW: ELOOP
    assert "not a regular file" in outcomes["reply-3.bin"]


def test_a_reply_larger_than_due_is_refused_before_it_is_read(exchange):
    folder, fd = exchange
    (folder / "reply-0.bin").write_bytes(b"\0" * 4096)
    with pytest.raises(wire.WireError, match="4096 bytes where at most 1024"):
        wire.open_payload(fd, "reply-0.bin", 1024)


def test_a_reply_naming_another_folder_or_file_is_a_protocol_break(tmp_path):
    process = CandidateProcess(tmp_path / "candidate", torch.device("cpu"), sandbox=None)
    exchange = tmp_path / "candidate" / "exchange"
    try:
        assert process._reply_name(str(exchange / "reply-7.bin")) == "reply-7.bin"
        for payload in (
            tmp_path / "reply-7.bin",
            exchange / "request-0-ab.bin",
            exchange / "sub" / "reply-1.bin",
            "/proc/self/cwd/../reply-1.bin",
        ):
            with pytest.raises(CandidateLost, match="outside its folder"):
                process._reply_name(str(payload))
    finally:
        process.close()


def test_what_the_process_printed_is_read_only_from_its_own_regular_files(tmp_path):
    process = CandidateProcess(tmp_path / "candidate", torch.device("cpu"), sandbox=None)
    folder = tmp_path / "candidate"
    (tmp_path / "outside.txt").write_text("kbot-canary-outside-the-sandbox")
    try:
        (folder / "startup.txt").write_text("imported torch\n")
        (folder / "output.txt").symlink_to(tmp_path / "outside.txt")
        assert process.output() == "imported torch\n"
        (folder / "output.txt").unlink()
        os.mkfifo(folder / "output.txt")
        reader = threading.Thread(target=process.output, daemon=True)
        reader.start()
        reader.join(10)
        assert not reader.is_alive(), "the judge waited on a FIFO"
    finally:
        process.close()


@pytest.mark.parametrize(
    "target, refused",
    [
        ("/proc/self/cwd/../kbot-x", True),
        ("/tmp/x", True),
        ("../x", True),
        ("sub/../../x", True),
        ("neighbour.bin", False),
        ("sub/neighbour.bin", False),
    ],
)
def test_the_audit_hook_lets_a_candidate_link_only_to_a_neighbouring_name(
    target, refused, tmp_path, monkeypatch
):
    """The second wall: a link's target means what it resolves to in the process that follows
    it, so only one beside the link (the same for the judge and the candidate) is allowed."""
    monkeypatch.chdir(tmp_path)  # the candidate's process runs in its private folder
    policy = Policy(readable=(str(tmp_path),), writable=(str(tmp_path),), programs=(),
                    imports=frozenset())  # fmt: skip
    why = policy.check("os.symlink", (target, str(tmp_path / "link"), None))
    assert (why is not None) is refused
    if refused:
        assert why == f"os.symlink to {target}"


def test_a_tensor_declaring_more_bytes_than_its_file_holds_allocates_nothing(exchange, monkeypatch):
    # A reply may say anything about its tensors: one of 60 GiB over a file of 12 bytes had the
    # judge allocate 60 GiB (pinned, on a GPU) before the short read was seen.
    folder, fd = exchange
    outbox = _outbox(folder, fd, "reply-0.bin")
    encoded = wire.encode([torch.ones(3)], outbox)
    outbox.write()
    body = encoded["list"][0]["tensor"]
    body.update(shape=[60 << 28], stride=[1], span=60 << 28, nbytes=60 << 30)
    allocated = []
    monkeypatch.setattr(wire, "_host_buffer", lambda n, staged: allocated.append(n))
    payload = wire.open_payload(fd, "reply-0.bin", 1 << 20)
    try:
        with pytest.raises(wire.WireError, match="bytes are missing"):
            wire.decode(encoded, payload, torch.device("cpu"))
    finally:
        os.close(payload)
    assert allocated == []
    assert wire.declared_bytes({"outputs": encoded}) == 60 << 30


def test_a_reply_whose_tensors_declare_more_than_was_due_is_refused_unread(tmp_path):
    process = CandidateProcess(tmp_path / "candidate", torch.device("cpu"), sandbox=None)
    try:
        process.max_reply_bytes = 1024
        tensor = {"tensor": {"dtype": "float32", "shape": [512], "stride": [1], "span": 512,
                             "at": 0, "nbytes": 2048}}  # fmt: skip
        with pytest.raises(CandidateLost, match="2048 bytes where at most 1024"):
            process._decoded({"ok": True, "outputs": {"list": [tensor]}})
    finally:
        process.kill()


def test_a_reply_torch_cannot_lay_out_is_the_candidates_loss(tmp_path, monkeypatch):
    process = CandidateProcess(tmp_path / "candidate", torch.device("cpu"), sandbox=None)

    def refused(*args, **kwargs):
        raise RuntimeError("setStorage: sizes [3], strides [1] out of bounds")

    monkeypatch.setattr(wire, "decode", refused)
    try:
        with pytest.raises(CandidateLost, match="an unreadable reply: setStorage"):
            process._decoded({"ok": True, "outputs": {"list": []}})
    finally:
        process.kill()
