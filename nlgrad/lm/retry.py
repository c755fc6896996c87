"""Which LM failures are worth retrying, and how long to wait between tries (exponential backoff with jitter)."""

from __future__ import annotations

import random

import litellm

# Order matters: ContextWindowExceededError is a BadRequestError, Timeout is an APIConnectionError.
_FATAL = (
    litellm.AuthenticationError,
    litellm.PermissionDeniedError,
    litellm.NotFoundError,
    litellm.BadRequestError,
    litellm.UnprocessableEntityError,
)
_TRANSIENT = (
    litellm.RateLimitError,
    litellm.Timeout,
    litellm.APIConnectionError,
    litellm.InternalServerError,
    litellm.ServiceUnavailableError,
    litellm.BadGatewayError,
)


class EmptyReplyError(Exception):
    """The provider answered, but with no text. Treated as transient."""


def is_retryable(exc: BaseException) -> bool:
    """True for rate limits, timeouts, connection errors, 5xx and empty replies; False for auth/invalid requests."""
    if isinstance(exc, _FATAL):
        return False
    if isinstance(exc, (_TRANSIENT, EmptyReplyError, TimeoutError, ConnectionError)):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status == 408 or status == 429 or status >= 500
    return False


def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random | None = None) -> float:
    """Exponential backoff with equal jitter: uniform in [cap/2, cap], cap = min(max_s, base_s * 2**attempt)."""
    rng = rng or random
    cap = min(max_s, base_s * (2**attempt))
    return rng.uniform(cap / 2, cap)
