"""Built-in agent programs (installed as ``nlgrad.programs``)."""

CATALOG: dict[str, str] = {
    "twx_react": "nlgrad.programs.twx_react:TWXReActProgram",
    "twx_random": "nlgrad.programs.twx_random:RandomActionProgram",
}
