"""A toy intent world: a small Banking77-shaped data folder and a fake agent that copies its nearest demo.

The fake agent replies the label of the prior-turn example that shares the most words (at least two) with the
message, else the first label: without examples it is right only on that label; shown the right example it is
right. So examples chosen from the failures fix exactly what they show.
"""

from __future__ import annotations

import json
import re


LABELS = ["card_arrival", "lost_or_stolen_card", "exchange_rate", "Refund_not_showing_up"]
PHRASES = {"card_arrival": "where is my new card {i} delivery",
           "lost_or_stolen_card": "somebody stole my wallet card {i} today",
           "exchange_rate": "what currency conversion rate {i} applies",
           "Refund_not_showing_up": "merchant refund still missing {i} account"}
_WORD = re.compile(r"[a-z]+")


def write_data(root, sizes=(("train", 12), ("dev", 8), ("test", 8))):
    root.mkdir(parents=True, exist_ok=True)
    (root / "labels.json").write_text(json.dumps(LABELS))
    for split, per_label in sizes:
        rows = [{"id": f"{split}-{label}-{i}", "text": PHRASES[label].format(i=f"n{i}"), "label": label}
                for i in range(per_label) for label in LABELS]
        (root / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def copy_nearest_demo(messages: list[dict]) -> str:
    if "responses" in json.dumps(messages[0]):  # not an intent prompt
        return "{}"
    user = set(_WORD.findall(messages[-1]["content"].lower())) - {"n"}
    best, label = 1, LABELS[0]
    for ask, answer in zip(messages[1:-1:2], messages[2:-1:2]):
        shared = len(user & set(_WORD.findall(ask["content"].lower())))
        if shared > best:
            best, label = shared, answer["content"].strip()
    return label
