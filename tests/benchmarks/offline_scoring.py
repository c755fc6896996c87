"""Score every packaged prompt of an instruction-following benchmark in a fresh process with the network blocked.

A fresh process, so the checker modules are imported under the block too (IFBench's import runs a spaCy model
download and NLTK's Punkt download, which the benchmark must neutralise). Blocked: ``socket.connect``,
``socket.create_connection`` and ``socket.getaddrinfo`` (an attempt raises OSError inside the checker, which the
metric records as that instruction's error). The response is a plain one: which instructions it follows does not
matter, only that each instruction has a checker that ran.
"""

from __future__ import annotations

import json
import subprocess
import sys

RESPONSE = "Write a short answer. It has two sentences, and one comma!"

SCRIPT = r"""
import json, socket, sys

def blocked(*args, **kwargs):
    raise OSError("network use blocked by the test")

socket.socket.connect = blocked
socket.create_connection = blocked
socket.getaddrinfo = blocked
try:
    socket.create_connection(("127.0.0.1", 9), timeout=1)
    is_blocked = False
except OSError as exc:
    is_blocked = "blocked by the test" in str(exc)

from nlgrad.runtime.registry import load_benchmark

bench = load_benchmark(sys.argv[1])
n, errors = 0, []
for split in ("train", "dev", "test"):
    for task in bench.tasks(split):
        n += 1
        result = bench.metric(task, sys.argv[2])
        checked = result.details["instructions"]
        if len(checked) != len(task.gold["instruction_id_list"]) or not 0.0 <= result.score <= 1.0:
            errors.append([task.id, "*", "not every instruction was checked"])
        errors += [[task.id, item["id"], item["error"]] for item in checked if item.get("error")]
print(json.dumps({"n": n, "blocked": is_blocked, "errors": errors}))
"""


def score_every_prompt_offline(benchmark_id: str, response: str = RESPONSE) -> dict:
    """``{"n": prompts scored, "blocked": the block works, "errors": [[task id, instruction id, error], ...]}``."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, benchmark_id, response], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
