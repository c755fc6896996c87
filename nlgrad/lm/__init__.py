"""LM layer: every LM call goes through litellm, with a disk cache, a usage ledger, retries and local serving."""

from nlgrad.lm.client import Completion, LM
from nlgrad.lm.ledger import Ledger
from nlgrad.lm.structured import parse_structured

__all__ = ["LM", "Completion", "Ledger", "parse_structured"]
