"""A toy benchmark and a fake OpenAI-compatible server for the reliability suite and the Ray executor tests.

The server (stdlib ``http.server`` on 127.0.0.1, one thread per request) answers ``POST /v1/chat/completions``
with a reply that depends only on the request's messages, so any process (a subprocess, a Ray worker) that points
a role at ``openai/<name>`` + ``api_base`` gets the same answers. Faults are injected at a fixed, seeded rate per
*attempt*: the first ``max_faults`` attempts of a request may fail (429, 500, 503, a reply that arrives after the
client's timeout, empty content, a malformed JSON body); after that the request is always served, so a client that
retries enough gets exactly the replies of a fault-free run. The server counts what it did in ``stats``.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # subprocesses (toy_cli.py) put only this folder on the path
    sys.path.append(str(TESTS))

from fake_lm import UPPER_RULE, EchoProgram, UpperCaseBenchmark, correction, nlpg_reply  # noqa: E402

from nlgrad.runtime.protocols import Task  # noqa: E402

FAULT_KINDS = ("429", "500", "503", "timeout", "empty", "malformed")


# ---------------------------------------------------------------------------------------------- toy benchmark
class ToyBenchmark(UpperCaseBenchmark):
    """The toy benchmark of tests/fake_lm.py under the id ``toy``, with seeded tasks, or the given ``texts``."""

    id, kind, default_program = "toy", "static", "toy"
    prefix, size = "toy", 8

    def __init__(self, variant=None, texts: dict[str, list[str]] | None = None):
        self.texts = texts

    def tasks(self, split, n=None):
        if self.texts is not None:
            rows = self.texts[split][: n if n is not None else None]
            return [Task(id=f"toy/{split}/{i}", split=split, inputs={"text": t}, gold=t.upper(), seed=i)
                    for i, t in enumerate(rows)]
        return super().tasks(split, n)

    def task(self, split, i, k):
        return replace(super().task(split, i, k), seed=1000 + k)


class ToyProgram(EchoProgram):
    name = "toy"
    routes = ["toy.say"]


TOY_CORRECTIONS = [correction(UPPER_RULE, 3), correction("Add a friendly greeting.", 1)]  # the greeting: support 1


def toy_reply(messages: list[dict]) -> str:
    """Deterministic replies for the agent, critic and optimizer prompts of NLPG on the toy benchmark."""
    return nlpg_reply(messages, "toy.say", TOY_CORRECTIONS)


# ---------------------------------------------------------------------------------------------- fake server
@dataclass
class FaultPlan:
    rate: float = 0.0
    seed: int = 0
    kinds: tuple[str, ...] = FAULT_KINDS
    max_faults: int = 2  # per distinct request; the attempt after that is always served
    timeout_sleep_s: float = 1.0  # how long a "timeout" fault stalls (longer than the client's timeout)

    def fault_for(self, key: str, attempt: int) -> str | None:
        if self.rate <= 0 or attempt >= self.max_faults:
            return None
        rng = random.Random(f"{self.seed}:{key}:{attempt}")
        if rng.random() >= self.rate:
            return None
        return rng.choice(self.kinds)


@dataclass
class ServerStats:
    requests: int = 0
    served: int = 0
    faults: Counter = field(default_factory=Counter)
    auth_headers: Counter = field(default_factory=Counter)
    attempts: dict[str, int] = field(default_factory=dict)
    first_at: float | None = None  # time.monotonic() of the first and the latest request
    last_at: float | None = None


def request_key(messages: list[dict]) -> str:
    blob = json.dumps([[m.get("role"), m.get("content")] for m in messages], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class FakeOpenAIServer:
    """``with FakeOpenAIServer(reply=toy_reply, faults=FaultPlan(rate=0.3)) as srv: srv.api_base``"""

    def __init__(self, reply: Callable[[list[dict]], str] = toy_reply, faults: FaultPlan | None = None,
                 latency_s: float = 0.0):
        self.reply, self.faults, self.latency_s = reply, faults or FaultPlan(), latency_s
        self.stats = ServerStats()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                self._send(200, json.dumps({"object": "list", "data": [{"id": "toy", "object": "model"}]}))

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server._handle(self, body)

            def _send(self, status, text, content_type="application/json"):
                data = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _handle(self, handler, body: dict) -> None:
        messages = body.get("messages") or []
        key = request_key(messages)
        with self._lock:
            self.stats.requests += 1
            self.stats.last_at = time.monotonic()
            if self.stats.first_at is None:
                self.stats.first_at = self.stats.last_at
            self.stats.auth_headers[handler.headers.get("Authorization", "")] += 1
            attempt = self.stats.attempts.get(key, 0)
            self.stats.attempts[key] = attempt + 1
            fault = self.faults.fault_for(key, attempt)
            if fault:
                self.stats.faults[fault] += 1
            else:
                self.stats.served += 1
        if self.latency_s:
            time.sleep(self.latency_s)
        if fault.isdigit() if fault else False:
            text = {"429": "Rate limit reached, retry later", "500": "internal error", "503": "service unavailable",
                    "401": "invalid api key"}.get(fault, "error")
            handler._send(int(fault), json.dumps({"error": {"message": text, "type": "fault", "code": fault}}))
            return
        if fault == "timeout":
            time.sleep(self.faults.timeout_sleep_s)
        if fault == "malformed":
            handler._send(200, '{"id": "x", "choices": [{"message": {"content": "half')
            return
        text = "" if fault == "empty" else self.reply(messages)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
        payload = {
            "id": f"chatcmpl-{key}", "object": "chat.completion", "created": 0, "model": body.get("model", "toy"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                      "total_tokens": prompt_tokens + len(text.split())},
        }
        handler._send(200, json.dumps(payload))


# ---------------------------------------------------------------------------------------------- registry
TOY_CATALOG = {"benchmarks": {"toy": "reliability_world:ToyBenchmark"},
               "programs": {"toy": "reliability_world:ToyProgram"}}


def install_toy_registry() -> Callable[[], None]:
    """Register ``toy`` as a benchmark id and program name in the real registry; returns an undo function."""
    import nlgrad.runtime.registry as registry

    real = registry._catalog

    def catalog(kind):
        return {**real(kind), **TOY_CATALOG.get(kind, {})}

    registry._catalog = catalog

    def undo() -> None:
        registry._catalog = real

    return undo
