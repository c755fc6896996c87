"""``python tests/reliability/toy_cli.py <nlgrad args>``: the real ``nlgrad`` CLI with the toy benchmark registered.

Used by subprocess tests (crash/resume). The registry has no way to name a benchmark class from the command line,
so this wrapper adds ``toy`` to the catalog, then runs the CLI. If ``NLGRAD_TEST_STARTED`` names a file, it is
written once the CLI is about to start (so a test can time kills after start-up). If ``NLGRAD_TEST_DEBUG_LOG`` names
a file, every Python logger (nlgrad, litellm, openai, httpx, ...) writes DEBUG records to it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reliability_world  # noqa: E402

reliability_world.install_toy_registry()

if os.environ.get("NLGRAD_TEST_DEBUG_LOG"):
    import logging

    logging.basicConfig(level=logging.DEBUG, filename=os.environ["NLGRAD_TEST_DEBUG_LOG"],
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    import litellm

    litellm._turn_on_debug()

from nlgrad.cli import app  # noqa: E402

if os.environ.get("NLGRAD_TEST_STARTED"):
    Path(os.environ["NLGRAD_TEST_STARTED"]).write_text("started")
app(prog_name="nlgrad")
