"""What the critic LM must return, as pydantic models (parsed, re-asked once, then skipped with a logged reason)."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from nlgrad.text import clip


class Diagnosis(BaseModel):
    """Outcome-level diagnosis of one trace."""

    what_went_wrong: str = Field(description="the main reason the outcome was not perfect ('' on success)")
    what_worked: str = Field(default="", description="what the program did well")
    root_cause_route: str = Field(default="", description="the module route most responsible, if one is")

    @field_validator("what_went_wrong", "what_worked", "root_cause_route", mode="before")
    @classmethod
    def _text(cls, value):
        return clip(value or "", 600)


class NodeFeedback(BaseModel):
    """Feedback for one module call: what its output caused downstream and what it should do instead."""

    feedback: str = Field(description="what this call did wrong or right, given what happened downstream")
    suggestion: str = Field(default="", description="a general instruction that would have helped this call")
    blame: float = Field(default=0.5, ge=0.0, le=1.0, description="0 = not at fault, 1 = the main cause")

    @field_validator("feedback", "suggestion", mode="before")
    @classmethod
    def _text(cls, value):
        return clip(value or "", 500)

    @field_validator("blame", mode="before")
    @classmethod
    def _blame(cls, value):
        try:
            return min(1.0, max(0.0, float(value)))
        except (TypeError, ValueError):
            return 0.5


class LocalizedStep(BaseModel):
    step: int = Field(description="the step number, as shown")
    feedback: str
    suggestion: str = ""

    @field_validator("feedback", "suggestion", mode="before")
    @classmethod
    def _text(cls, value):
        return clip(value or "", 400)


class LocalizedSteps(BaseModel):
    """For a route called many times in one episode: the few steps that mattered."""

    steps: list[LocalizedStep] = Field(default_factory=list)
