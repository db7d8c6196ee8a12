"""The chatparse exception family: one base class, subclasses by who is at fault.

Every error carries a stable machine-readable ``code`` and a location (``field``, ``key``,
``offset``, ``path``). Messages follow one grammar: expected, found, where, then the fix.
"""

from __future__ import annotations

import ast
import re
from typing import Any

EXCERPT_LIMIT = 80


def excerpt(text: str, limit: int = EXCERPT_LIMIT) -> str:
    """A short, repr-quoted excerpt of ``text`` for error messages (never the whole region)."""
    if len(text) <= limit:
        return repr(text)
    half = limit // 2
    return f"{text[:half]!r}…{text[-half:]!r} ({len(text)} chars)"


REASON_LIMIT = 1000
# Quoted text (a repr) in an exception message, read left to right; one over EXCERPT_LIMIT characters is
# model text and is shown as an excerpt.
_QUOTED = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*\"""")


def region_failure(field: str, parser: str, problem: BaseException, body: str) -> str:
    """The message for a region its content parser rejected: field and parser, then the parser's own words
    (transformers' wording, for the parsers both libraries have) with long quoted text as excerpts, then
    the region as a short excerpt unless those words already show it."""
    reason = str(problem.args[0]) if isinstance(problem, KeyError) and problem.args else str(problem)
    reason = _QUOTED.sub(_excerpt_quote, reason)
    if len(reason) > REASON_LIMIT:
        reason = reason[:REASON_LIMIT] + "…"
    shown = excerpt(body)
    return f"Field '{field}' ({parser} parser): {reason}" + ("" if shown in reason else f" (region {shown})")


def _excerpt_quote(quoted: re.Match[str]) -> str:
    if len(quoted.group()) - 2 <= EXCERPT_LIMIT:
        return quoted.group()
    try:
        value = ast.literal_eval(quoted.group())
    except (ValueError, SyntaxError):
        return quoted.group()
    return excerpt(value) if isinstance(value, str) else quoted.group()


class ChatparseError(Exception):
    """Base class of every error chatparse raises."""

    code: str = "chatparse_error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        key: str | None = None,
        offset: int | None = None,
        path: str | None = None,
        **details: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.field = field
        self.key = key
        self.offset = offset
        self.path = path
        self.details = details

    def __str__(self) -> str:
        return self.message

    @property
    def location(self) -> dict[str, Any]:
        """Where the error is, as a dict of the location attributes that are set."""
        loc = {"field": self.field, "key": self.key, "offset": self.offset, "path": self.path}
        return {k: v for k, v in loc.items() if v is not None}


class TemplateError(ChatparseError, ValueError):
    """The response template is invalid (the template author's fault). Raised at load time."""

    code = "invalid_template"


class TemplateWarning(UserWarning):
    """A template loads but has something its author probably did not mean (e.g. unused content_args)."""


class OutputError(ChatparseError, ValueError):
    """The model output cannot be parsed as the template says (the model's fault)."""

    code = "invalid_output"


class ContentParseError(OutputError):
    """A region's body failed its content parser. Names the field, the parser and an excerpt."""

    code = "content_parse_failed"


class ContentNestingError(ContentParseError, RuntimeError):
    """A region's body nests deeper than the parser allows (the reference raises RecursionError)."""

    code = "content_too_deep"


class TransformError(OutputError, KeyError):
    """A transform placeholder could not be resolved against the parsed body and captures."""

    code = "transform_failed"

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.message


class MissingFieldError(OutputError):
    """A field marked ``optional: false`` did not appear in the output."""

    code = "missing_required_field"


class UsageError(ChatparseError, RuntimeError):
    """The caller used the API wrongly (e.g. feeding a parser after ``finalize``)."""

    code = "usage_error"


class InputTypeError(UsageError, TypeError):
    """An argument of the wrong Python type (``feed(None)``, ``loads(5)``): a ``TypeError``, as the standard
    library raises for it."""

    code = "bad_input_type"


class PrefixRequiredError(ChatparseError, ValueError):
    """``prefix`` was omitted; ``prefix=""`` opts out explicitly."""

    code = "prefix_required"


class RegexBudgetError(ChatparseError, RuntimeError):
    """A delimiter regex exceeded its time budget (a catastrophic pattern or input)."""

    code = "regex_budget_exceeded"


__all__ = [
    "ChatparseError",
    "ContentNestingError",
    "ContentParseError",
    "InputTypeError",
    "MissingFieldError",
    "OutputError",
    "PrefixRequiredError",
    "RegexBudgetError",
    "TemplateError",
    "TemplateWarning",
    "TransformError",
    "UsageError",
    "excerpt",
    "region_failure",
]


class InvalidUtf8Error(OutputError):
    """``feed_bytes`` got bytes that are not valid UTF-8 (``offset`` is the byte offset in the stream)."""

    code = "invalid_utf8"


class TruncatedUtf8Error(InvalidUtf8Error):
    """The byte stream ended inside a multi-byte UTF-8 character."""

    code = "truncated_utf8"


class EngineFault(ChatparseError, RuntimeError):
    """An unexpected exception inside the engine, wrapped so only ChatparseError leaves it (a bug: report it)."""

    code = "engine_fault"


__all__ += ["EngineFault", "InvalidUtf8Error", "TruncatedUtf8Error"]
