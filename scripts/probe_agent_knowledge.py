"""Does the agent model know what a benchmark's irreversible choices need? Asks it short questions through nlgrad's
LM layer (agent role, temperature 0, the LM cache) and prints how many it answers right.

The TWX and ScienceWorld programs rank and filter the actions, but some choices need world knowledge no ranking
has: which appliance roasts, grills or fries (TWX ``cooking``: cooking with the wrong one ends the game), and which
objects are living things (``sciworld/find-living-thing``: focusing on another ends the episode at -100). Each
question is asked with the options in three orders, so a model that always names a position or always says "yes"
is seen as such. ``--with-lesson`` puts the human policy's line for that knowledge before each question: does the
model use a lesson it is shown next to the choice?

    .venv/bin/python scripts/probe_agent_knowledge.py                      # the embedded 0.5B agent
    .venv/bin/python scripts/probe_agent_knowledge.py --lm local/qwen2.5-coder-1.5b
    .venv/bin/python scripts/probe_agent_knowledge.py --with-lesson
"""

from __future__ import annotations

import argparse
import os
import re

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from nlgrad.config import load_settings  # noqa: E402
from nlgrad.lm.client import LM  # noqa: E402

# TextWorldExpress cooking: the game's own messages ("You roast the red potato with the oven", "You grill the banana
# with the toaster", "You fry the egg with the stove").
APPLIANCES = {"roast": "oven", "grill": "toaster", "fry": "stove"}
ORDERS = (("stove", "oven", "toaster"), ("oven", "toaster", "stove"), ("toaster", "stove", "oven"))
# ScienceWorld find-living-thing: objects from its dev episodes, and whether the simulator counts them as living.
LIVING = {"adult bee": True, "apple tree": True, "frog": True, "pea plant": True, "giant tortoise": True,
          "banana": False, "blue paint": False, "sink": False, "ground": False, "cup": False, "orange": False,
          "bee hive": False, "bathtub": False, "finger painting": False, "red box": False}
# The lines a human policy gives for that knowledge (benchmarks/human_policies/twx-cooking.yaml, sciworld.yaml).
APPLIANCE_LESSON = "Roast food with the oven, grill it with the toaster, fry it with the stove."
LIVING_LESSON = "Living things are animals (also babies and eggs) and plants; fruit, food and tools are not living."
FIND_LIVING = "Your task is to find a(n) living thing. First, focus on the thing. Then, move it to the red box."


def ask(lm: LM, question: str) -> str:
    completion = lm.complete("agent", [{"role": "user", "content": question}], temperature=0.0, max_tokens=8)
    return (completion.text or "").strip().lower()


def first_word(reply: str) -> str:
    words = re.findall(r"[a-z]+", reply)
    return words[0] if words else ""


def probe_appliances(lm: LM, lesson: bool = False) -> tuple[int, int, list[str]]:
    right, answers = 0, []
    prefix = f"Lesson: {APPLIANCE_LESSON}\n" if lesson else ""
    for verb, appliance in APPLIANCES.items():
        for order in ORDERS:
            reply = first_word(ask(lm, f"{prefix}In a kitchen text game, which appliance do you use to {verb} food? "
                                       f"Choose one of: {', '.join(order)}. Answer with one word."))
            right += reply == appliance
            answers.append(f"{verb}/{order[0]}-first={reply}")
    return right, len(APPLIANCES) * len(ORDERS), answers


def probe_living(lm: LM, lesson: bool = False) -> tuple[int, int, list[str]]:
    right, answers = 0, []
    prefix = f"Lesson: {LIVING_LESSON}\n" if lesson else ""
    for thing, living in LIVING.items():
        reply = first_word(ask(lm, f"{prefix}Task: {FIND_LIVING}\nIs the {thing} a living thing the task asks you "
                                   "to focus on? Answer yes or no."))
        right += (reply == "yes") == living
        answers.append(f"{thing}={reply}")
    return right, len(LIVING), answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lm", default=None, help="agent model (default: the embedded 0.5B)")
    parser.add_argument("--with-lesson", action="store_true",
                        help="show the human policy's lesson before each question")
    args = parser.parse_args()
    settings = load_settings().with_role_model("agent", args.lm)
    lm = LM(settings)
    print(f"agent model: {lm.model_for('agent')}" + (" (with lesson)" if args.with_lesson else ""))
    for name, probe in (("cooking appliance (roast/grill/fry)", probe_appliances),
                        ("find-living-thing: is it living", probe_living)):
        right, total, answers = probe(lm, args.with_lesson)
        print(f"{name}: {right}/{total} right")
        print("  " + ", ".join(answers))


if __name__ == "__main__":
    main()
