"""Built-in agent programs (installed as ``nlgrad.programs``)."""

from importlib.resources import files


def program_template(name: str) -> str:
    """The text of a prompt template shipped in ``nlgrad.programs``' ``templates/`` folder, e.g. ``twx_act.j2``."""
    return files("nlgrad.programs").joinpath(f"templates/{name}").read_text(encoding="utf-8")


CATALOG: dict[str, str] = {
    "twx_scaffolded": "nlgrad.programs.twx_scaffolded:TWXScaffoldedProgram",
    "twx_react": "nlgrad.programs.twx_react:TWXReActProgram",  # twx_scaffolded under its earlier name
    "twx_react_text": "nlgrad.programs.twx_scaffolded:TWXScaffoldedTextProgram",
    "react_plain": "nlgrad.programs.react_plain:ReActPlainProgram",
    "twx_random": "nlgrad.programs.twx_random:RandomActionProgram",
    "hotpot_multihop": "nlgrad.programs.hotpot_multihop:HotpotMultiHopProgram",
    "hover_verify": "nlgrad.programs.hover_verify:HoverVerifyProgram",
    "locomo_rag": "nlgrad.programs.locomo_rag:LocomoRAGProgram",
    "team_hotpot": "nlgrad.programs.team_hotpot:TeamHotpotProgram",
    "team_twx": "nlgrad.programs.team_twx:TeamTWXProgram",
    "if_follow": "nlgrad.programs.if_follow:InstructionFollowProgram",
    "tau2_agent": "nlgrad.programs.tau2_agent:Tau2AgentProgram",
    "tau2_idle_floor": "nlgrad.programs.tau2_agent:Tau2IdleFloor",
    "echo_floor": "nlgrad.programs.floors:EchoFloor",
    "majority_floor": "nlgrad.programs.floors:MajorityLabelFloor",
    "nearest_label_floor": "nlgrad.programs.floors:NearestLabelFloor",
    "intent_classify": "nlgrad.programs.intent_classify:IntentClassifyProgram",
    "intent_route": "nlgrad.programs.intent_route:IntentRouteProgram",
}
