"""Ending a run on SIGTERM or SIGINT: what is finished stays saved, in-flight work stops, the model servers go.

``with signals_stop_the_run():`` (the ``eval``, ``optimize`` and ``compare`` commands) makes SIGTERM and SIGINT, in
the main thread, raise :class:`Interrupted` (a ``KeyboardInterrupt``, so every ``except BaseException`` cleanup
runs). The same signal also:

* sets :data:`STOPPING`, which worker threads check through :func:`raise_if_stopping` before each LM call and
  before starting a model server, so a task in flight ends at its next call instead of running to the end (it stays
  set until the next ``signals_stop_the_run`` begins, so no thread left behind starts a server again);
* calls the callbacks given to :func:`on_stop` in a short-lived thread (the local model servers this process
  started register theirs), so the main thread is not held up by them.

Inside ``with held():`` (the executor writing one task's result and trace) the raise waits for the block's end,
so a result is written whole or not at all. A run that catches the interrupt adds what it kept and the flags that
resume it (:meth:`Interrupted.of`); the command prints one line from :meth:`Interrupted.message`.
Stdlib only: every layer may import it.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import threading
from typing import Callable, Iterator, Sequence

STOPPING = threading.Event()
_callbacks: list[Callable[[], None]] = []
_callbacks_lock = threading.Lock()
_held = 0
_pending: int | None = None  # a signal that arrived inside held(), raised at its end
_last_signal: int | None = None
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupted(KeyboardInterrupt):
    """A run ended by SIGTERM or SIGINT. ``saved`` says what was kept (e.g. "7 of 40 task results are saved in
    runs/x"); ``resume_args`` are the flags the same command needs to go on from there (none: the same command)."""

    def __init__(self, signum: int = signal.SIGINT, saved: str | None = None, resume_args: Sequence[str] = ()):
        super().__init__(signal.Signals(signum).name)
        self.signum, self.saved, self.resume_args = int(signum), saved, tuple(resume_args)

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    @classmethod
    def of(cls, exc: BaseException, saved: str | None = None, resume_args: Sequence[str] = ()) -> "Interrupted":
        """``exc`` (an Interrupted, or a plain KeyboardInterrupt: SIGINT) with what the run kept and how to resume."""
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        return cls(signum, saved if saved is not None else getattr(exc, "saved", None),
                   resume_args or getattr(exc, "resume_args", ()))

    def message(self, command: Sequence[str]) -> str:
        """What was saved and ``command`` plus the resume flags it lacks, on one line."""
        resume = list(command)
        if self.resume_args and not any(a == self.resume_args[0] or a.startswith(self.resume_args[0] + "=")
                                        for a in resume):
            resume += self.resume_args
        saved = f"{self.saved}; " if self.saved else ""
        return f"{saved}resume with: {shlex.join(resume)}"


def raise_if_stopping() -> None:
    """Raise :class:`Interrupted` in any thread once a stop signal arrived (see the module docstring)."""
    if STOPPING.is_set():
        raise Interrupted(signal.SIGTERM if _last_signal is None else _last_signal)


def on_stop(callback: Callable[[], None]) -> None:
    """Call ``callback`` (once, in a thread of its own) when a stop signal arrives; registered at most once."""
    with _callbacks_lock:
        if callback not in _callbacks:
            _callbacks.append(callback)


def _run_callbacks() -> None:
    with _callbacks_lock:
        callbacks = list(_callbacks)
    for callback in callbacks:
        try:
            callback()
        except Exception:  # noqa: BLE001 - stopping is best effort; atexit tries again
            pass


def _on_signal(signum: int, frame) -> None:  # noqa: ARG001 - the signal module's handler signature
    global _pending, _last_signal
    first = not STOPPING.is_set()
    _last_signal = signum
    STOPPING.set()
    if first:
        threading.Thread(target=_run_callbacks, name="nlgrad-stop", daemon=True).start()
    if _held:
        _pending = signum
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_stop_the_run() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`Interrupted` in the main thread while the block runs (elsewhere: no effect).
    The previous handlers come back afterwards."""
    global _pending, _last_signal
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    STOPPING.clear()
    _pending, _last_signal = None, None
    previous = {sig: signal.signal(sig, _on_signal) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A stop signal that arrives inside the block (main thread) is raised when the block ends."""
    global _held, _pending
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _held += 1
    try:
        yield
    finally:
        _held -= 1
        if _held == 0 and _pending is not None:
            signum, _pending = _pending, None
            raise Interrupted(signum)
