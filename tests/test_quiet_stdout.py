"""kbot.quiet_stdout: the user's prints are kept out of kbot's output in the calling thread
only; another thread's prints, and the stream after the block, are as before."""

import sys
import threading

from kbot.quiet_stdout import quiet_stdout


def test_a_quiet_thread_leaves_the_other_threads_output_alone(capsys):
    entered, release = threading.Event(), threading.Event()
    kept = {}

    def trace():
        with quiet_stdout() as sink:
            print("the user's model says hello")
            entered.set()
            release.wait(5)
        kept["sink"] = sink.getvalue()

    worker = threading.Thread(target=trace)
    worker.start()
    assert entered.wait(5)
    print("kbot's progress")  # while the other thread is quiet
    release.set()
    worker.join(5)
    out = capsys.readouterr().out
    assert out == "kbot's progress\n"
    assert kept["sink"] == "the user's model says hello\n"


def test_the_stream_is_given_back_when_the_last_block_ends():
    before = sys.stdout
    with quiet_stdout() as outer:
        with quiet_stdout() as inner:
            print("inner")
        print("outer")
    assert sys.stdout is before
    assert (outer.getvalue(), inner.getvalue()) == ("outer\n", "inner\n")


def test_an_abandoned_quiet_thread_does_not_swallow_the_main_threads_output(capsys):
    # Ctrl-C leaves a proposer's thread inside its block: the command's result still prints.
    entered, release = threading.Event(), threading.Event()

    def stuck():
        with quiet_stdout():
            entered.set()
            release.wait(5)

    worker = threading.Thread(target=stuck, daemon=True)
    worker.start()
    assert entered.wait(5)
    print("the result")
    assert capsys.readouterr().out == "the result\n"
    release.set()
    worker.join(5)
