"""Optimization methods: each proposes policy updates from rollouts; the shared loop gates and commits them."""

METHODS: dict[str, str] = {
    "nlpg": "nlgrad.methods.nlpg:NLPG",
}
