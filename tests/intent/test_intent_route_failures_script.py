"""scripts/intent_route_failures.py: an intent_route eval's failures split by the route that went wrong."""

from script_modules import load_script


def row(gold, group, score):
    return {"details": {"gold": gold}, "output": {"group": group}, "score": score}


def test_failures_split_into_wrong_area_and_right_area_wrong_intent():
    script = load_script("intent_route_failures")
    group_of = {"card_arrival": "cards", "lost_or_stolen_card": "cards", "exchange_rate": "money"}
    rows = [row("card_arrival", "cards", 1.0),           # right
            row("lost_or_stolen_card", "cards", 0.0),    # right area, wrong intent
            row("exchange_rate", "cards", 0.0),          # wrong area
            row("exchange_rate", "money", 1.0)]          # right
    split = script.area_split(rows, group_of)
    assert split == {"n": 4, "accuracy": 0.5, "area_right": 0.75, "wrong_area": 1, "right_area_wrong_intent": 1}
