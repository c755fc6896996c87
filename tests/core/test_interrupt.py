"""nlgrad.interrupt: a stop signal inside ``held()`` waits for the block to end (a result and its trace are written
whole), then raises Interrupted; worker threads see it at their next check; the resume line adds only missing flags."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from nlgrad import interrupt
from nlgrad.interrupt import Interrupted, held, raise_if_stopping, signals_stop_the_run


@pytest.fixture(autouse=True)
def no_stop_left(monkeypatch):
    monkeypatch.setattr(interrupt, "_callbacks", [])  # stop no server another test of this session started
    yield
    interrupt.STOPPING.clear()


def test_a_signal_inside_held_is_raised_when_the_block_ends():
    written = []
    with signals_stop_the_run():
        with pytest.raises(Interrupted) as caught:
            with held():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(1000):  # the handler runs here, between bytecodes; it must not raise inside
                    written.append(1)
                written.append("end")
        assert caught.value.signum == signal.SIGTERM and written[-1] == "end"
        seen = []
        worker = threading.Thread(target=lambda: seen.append(pytest.raises(Interrupted, raise_if_stopping)))
        worker.start()
        worker.join()
        assert seen
    assert signal.getsignal(signal.SIGTERM) is not interrupt._on_signal  # the previous handler is back


def test_the_resume_line_adds_only_the_flags_the_command_lacks():
    stopped = Interrupted(signal.SIGINT, "3 of 8 task results are saved in runs/x", ("--run-dir", "runs/x"))
    assert stopped.message(["nlgrad", "eval", "-b", "toy"]) == ("3 of 8 task results are saved in runs/x; resume "
                                                                "with: nlgrad eval -b toy --run-dir runs/x")
    assert stopped.message(["nlgrad", "eval", "--run-dir=runs/x"]).endswith("nlgrad eval --run-dir=runs/x")
    assert Interrupted.of(KeyboardInterrupt()).signal_name == "SIGINT"
