"""nlgrad: language-space gradients for frozen LLM agents."""

import os as _os

# litellm must never reach the network at import time for its cost map.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__version__ = "0.1.0"

