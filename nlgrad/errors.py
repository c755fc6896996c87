"""Typed errors. Every user-facing error names the file / field / value that caused it."""

from __future__ import annotations


class NlgradError(Exception):
    """Base class for all nlgrad errors shown to users."""


class ConfigError(NlgradError):
    """A bad configuration value, option or config file."""

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None, value: object = None):
        parts = [message]
        if source:
            parts.append(f"source: {source}")
        if field:
            parts.append(f"field: {field}")
        if value is not None:
            parts.append(f"value: {value!r}")
        super().__init__(" | ".join(parts))
        self.source, self.field, self.value = source, field, value


class LMCallError(NlgradError):
    """An LM call failed for good (after retries, or with a non-retryable error)."""

    def __init__(self, message: str, *, role: str, model: str, retryable: bool = False):
        from nlgrad.redact import redact  # a provider's error body may echo the key it refused

        super().__init__(redact(f"[role={role} model={model}] {message}"))
        self.role, self.model, self.retryable = role, model, retryable


class StructuredOutputError(NlgradError):
    """An LM reply could not be parsed into the expected structure, even after one re-ask."""

    def __init__(self, *, role: str, model: str, schema: str, text: str, error: str, limit: int = 400):
        shown = text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"
        super().__init__(
            f"role={role} model={model}: reply is not a valid {schema}: {error.strip()} | reply: {shown!r}"
        )
        self.role, self.model, self.schema, self.text, self.error = role, model, schema, text, error


class LocalModelError(NlgradError):
    """The embedded local model or its server could not be prepared."""


class BenchmarkError(NlgradError):
    """A benchmark could not be found or its data could not be loaded."""


class TaskTimeout(NlgradError):
    """A task ran past its deadline."""


class StepCapReached(NlgradError):
    """An interactive episode reached its step cap."""


class StorageError(NlgradError, OSError):
    """A write failed for want of space or a failing disk (ENOSPC, EDQUOT, EIO, EROFS). The run stops with this one
    message; every file written so far stays readable and the same command resumes once the cause is fixed. It is
    also an OSError, so code that handled the raw error still does."""

    def __init__(self, path: object, exc: OSError):
        reason = exc.strerror or str(exc)
        super().__init__(exc.errno, f"cannot write {path}: {reason}; the run stopped cleanly: free space (or fix the "
                                    "disk) and run the same command again to resume")
        self.path = str(path)

    def __str__(self) -> str:
        return self.strerror or super().__str__()
