"""Helpers for tests/compare: the toy benchmark of tests/fake_lm.py (re-exported), and fake LM replies that also
answer the baselines' optimizer prompts (GEPA reflection, MIPROv2 proposals, TextGrad gradients and updates);
served through litellm's mock_response by the fixtures in conftest.py.

Extends the fake LM world of tests/fake_lm.py: the fake agent shouts (upper-cases) only when its system prompt says
UPPERCASE; every optimizer, asked anything, suggests the UPPERCASE rule in the shape its prompt wants.
"""

from __future__ import annotations

import re

from fake_lm import UPPER_RULE as RULE
from fake_lm import ShoutBenchmark, ShoutProgram, agent_reply, correction, critic_reply  # noqa: F401 - re-exported

CORRECTIONS = [correction(RULE, 3)]


def fake_reply(messages) -> str:
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    user = messages[-1]["content"]
    everything = "\n".join(str(m.get("content", "")) for m in messages)
    # --- nlgrad's own critic / optimizer (NLPG) -----------------------------------------------------------------
    reply = critic_reply(user, "shout.say", CORRECTIONS)
    if reply is not None:
        return reply
    # --- GEPA's reflective proposer: the new instruction inside ``` ---------------------------------------------
    if "I provided an assistant with the following instructions" in everything:
        return f"```\n{RULE}\n```"
    # --- TextGrad: gradients (feedback) and the optimizer step ---------------------------------------------------
    if "<IMPROVED_VARIABLE>" in everything:
        return f"<IMPROVED_VARIABLE>{RULE}</IMPROVED_VARIABLE>"
    if "You will give feedback to a variable" in everything:
        return "The output keeps lower-case letters; the lessons should require UPPERCASE output."
    # --- DSPy (MIPROv2's proposer modules use DSPy's chat adapter: answer every requested output field) ------------
    if "[[ ## completed ## ]]" in everything:
        fields = re.findall(r"\[\[ ## (\w+) ## \]\]", system)
        wanted = [f for f in dict.fromkeys(fields) if f != "completed" and f"[[ ## {f} ## ]]\n{{" in system]
        outputs = wanted or ["output"]
        return "\n\n".join(f"[[ ## {f} ## ]]\n{RULE}" for f in outputs) + "\n\n[[ ## completed ## ]]"
    # --- the agent ------------------------------------------------------------------------------------------------
    return agent_reply(system, user)
