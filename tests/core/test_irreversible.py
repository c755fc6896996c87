"""The confirm step for irreversible actions (programs/irreversible.py): families, options and reply parsing."""

from nlgrad.programs.irreversible import (NONE_OF_THESE, agreed_choice, confirm_orders, family_of,
                                          parse_confirmation)

COOK = (r"cook .+ in ",)
VALID = ["cook red potato in oven", "cook red potato in stove", "cook red potato in toaster", "cook egg in stove",
         "slice red potato with knife", "open fridge"]
CUT = (r"(?:slice|dice|chop) (?P<obj>.+)$",)


def test_a_family_is_the_actions_sharing_the_patterns_match():
    assert family_of("cook red potato in stove", VALID, COOK) == [
        "cook red potato in oven", "cook red potato in stove", "cook red potato in toaster"]
    assert family_of("cook egg in stove", VALID, COOK) == ["cook egg in stove"]
    assert family_of("slice red potato with knife", VALID, COOK) == []
    assert family_of("open fridge", VALID, ()) == []
    # with an ``obj`` group the family is keyed on the object: the three cuts of one ingredient
    cuts = ["chop egg", "chop pork chop", "dice pork chop", "slice egg", "slice pork chop", "take knife"]
    assert family_of("slice pork chop", cuts, CUT) == ["chop pork chop", "dice pork chop", "slice pork chop"]
    assert family_of("take knife", cuts, CUT) == []
    # the scaffolded program's knowledge of cooking names both families (the benchmark itself names none)
    from nlgrad.programs.game_knowledge import knowledge_for
    from nlgrad.runtime.registry import load_benchmark

    cooking = knowledge_for(load_benchmark("twx/cooking")).irreversible
    assert not hasattr(load_benchmark("twx/cooking"), "irreversible")
    assert family_of("cook egg in stove", VALID, cooking) == ["cook egg in stove"]
    assert family_of("dice egg", cuts, cooking) == ["dice egg", "chop egg", "slice egg"]
    # a free-form action outside the list still gets a family (itself first, then the listed ones)
    focus = ["focus on frog", "focus on sink", "go to kitchen"]
    assert family_of("focus on bee", focus, (r"focus on ",)) == ["focus on bee", "focus on frog", "focus on sink"]


def test_the_two_confirm_orders_put_every_option_at_another_position():
    assert confirm_orders(["focus on frog"]) == (["focus on frog", NONE_OF_THESE], [NONE_OF_THESE, "focus on frog"])
    for family in (["a"], ["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"]):
        first, second = confirm_orders(family)
        assert sorted(first) == sorted(second) and first[-1] == NONE_OF_THESE
        # a reply that names a position (any number) never names the same option in both orders
        assert all(first[i] != second[i] for i in range(len(first))), family


def test_a_choice_is_agreed_only_when_every_answer_names_it():
    assert agreed_choice(["focus on frog", "focus on frog"]) == "focus on frog"
    assert agreed_choice([NONE_OF_THESE, NONE_OF_THESE]) == NONE_OF_THESE
    assert agreed_choice(["focus on frog", "focus on sink"]) is None
    assert agreed_choice(["focus on frog", None]) is None
    assert agreed_choice([None, None]) is None
    assert agreed_choice(["focus on frog"]) == "focus on frog"  # one order (robust_confirm=False)


def test_parse_confirmation_reads_a_number_or_an_options_text_and_reports_garbage():
    inputs = {"options": confirm_orders(VALID[:3])[0]}
    assert parse_confirmation("3", inputs) == {"index": 2, "action": "cook red potato in toaster", "match": "number"}
    assert parse_confirmation(" 4.", inputs)["action"] == NONE_OF_THESE
    assert parse_confirmation("I would cook red potato in oven", inputs)["index"] == 0
    assert parse_confirmation("9", inputs) == {"index": None, "action": None, "match": "none"}  # out of range
    assert parse_confirmation("", inputs)["match"] == "none"
