"""fan_out: the list comprehension's results and errors, with calls side by side."""

import threading
import time

import pytest

from nlgrad.lm.fanout import fan_out


def test_results_keep_input_order_and_calls_overlap():
    running, peak, lock = [0], [0], threading.Lock()

    def slow_square(x):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05 * (5 - x))  # later items finish first
        with lock:
            running[0] -= 1
        return x * x

    assert fan_out(slow_square, range(5), workers=3) == [0, 1, 4, 9, 16]
    assert peak[0] == 3


def test_one_worker_runs_in_the_calling_thread_and_errors_propagate():
    threads = set()
    fan_out(lambda x: threads.add(threading.get_ident()), [1, 2], workers=1)
    assert threads == {threading.get_ident()}
    with pytest.raises(ZeroDivisionError):
        fan_out(lambda x: 1 / x, [1, 0, 2], workers=2)
