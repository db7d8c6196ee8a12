"""The grounded-answer contract: one strict pydantic model and the JSON Schema derived from it.

Types and keys live here; status relations, limits and grounding are enforced by ``check.py``.
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION: Final = "grounded-answer/1"
SCHEMA_NAME: Final = "grounded_answer"

MAX_RAW_BYTES: Final = 65_536
MAX_ANSWER_CHARS: Final = 4_000
MAX_CLARIFICATION_CHARS: Final = 500
MAX_CITATIONS: Final = 8
MAX_QUOTE_CHARS: Final = 500

Status = Literal["answered", "needs_clarification", "insufficient_evidence"]
STATUSES: Final[tuple[str, ...]] = get_args(Status)


class Citation(BaseModel):
    """A verbatim quote from one document block the model was shown."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    source_id: str
    quote: str


class GroundedAnswer(BaseModel):
    """What the model returns: every key present, ``null`` or ``[]`` when empty, nothing else."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    status: Status
    answer: str | None
    citations: list[Citation]
    clarification: str | None


# Titles and docstring descriptions are Python-side documentation, not instructions for the model.
_DROPPED_KEYWORDS: Final = frozenset({"title", "description", "default"})


def generation_schema() -> dict[str, Any]:
    """The strict JSON Schema for structured outputs, derived from ``GroundedAnswer``.

    Every property is required, every object has ``additionalProperties: false``, nullables are
    type lists and ``$ref`` is inlined. Length limits are not sent (provider support varies).
    """
    return copy.deepcopy(_cached_schema())


@functools.cache
def _cached_schema() -> dict[str, Any]:
    raw = GroundedAnswer.model_json_schema()
    defs = raw.pop("$defs", {})
    return _strictify(raw, defs)


def _strictify(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        return _strictify(copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]]), defs)
    if "anyOf" in node:
        return _nullable(node["anyOf"], defs)
    out = {key: value for key, value in node.items() if key not in _DROPPED_KEYWORDS}
    if out.get("type") == "object":
        properties = {name: _strictify(prop, defs) for name, prop in out.get("properties", {}).items()}
        out["properties"] = properties
        out["required"] = list(properties)
        out["additionalProperties"] = False
    if "items" in out:
        out["items"] = _strictify(out["items"], defs)
    return out


def _nullable(options: list[dict[str, Any]], defs: dict[str, Any]) -> dict[str, Any]:
    """``T | None`` becomes ``{"type": [T, "null"]}``; anything richer is a bug in the model."""
    kinds = [option.get("type") for option in options]
    if len(options) != 2 or "null" not in kinds or not all(isinstance(kind, str) for kind in kinds):
        raise TypeError("generation_schema supports only 'scalar | None' unions")
    other = _strictify(next(option for option in options if option.get("type") != "null"), defs)
    other["type"] = [other["type"], "null"]
    return other


__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_CITATIONS",
    "MAX_CLARIFICATION_CHARS",
    "MAX_QUOTE_CHARS",
    "MAX_RAW_BYTES",
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "STATUSES",
    "Citation",
    "GroundedAnswer",
    "Status",
    "generation_schema",
]
