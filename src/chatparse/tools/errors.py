"""Errors of the tool-call boundary, each with a stable ``code``.

Bad tool definitions, unknown tool names, rejected arguments, unreadable near-JSON and
broken argument streams are named separately so callers (and models) can act on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chatparse.errors import ChatparseError


class ToolDefinitionError(ChatparseError, ValueError):
    """A tool definition (dict, function or model) cannot become a JSON-Schema tool."""

    code = "invalid_tool_definition"


class UnknownToolError(ChatparseError, KeyError):
    """A tool name is not in the ``ToolSet``; ``known`` lists the names that are."""

    code = "unknown_tool"

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.message

    @property
    def known(self) -> list[str]:
        return list(self.details.get("known", []))


class ToolArgumentError(ChatparseError, ValueError):
    """Tool arguments were rejected. ``errors`` holds every individual issue found.

    Each issue is itself a ``ToolArgumentError`` with one of the codes ``invalid_choice``
    (``got``, ``allowed``), ``missing_argument``, ``unknown_argument`` (``known``) or
    ``wrong_type`` (``expected``, ``found``), plus ``field`` and a JSON ``path`` (and
    ``too_deep`` for data nested past the depth limit).
    """

    code = "invalid_arguments"

    def __init__(self, message: str, *, errors: Sequence[ToolArgumentError] = (), **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.errors: list[ToolArgumentError] = list(errors) or [self]

    @property
    def got(self) -> Any:
        return self.details.get("got")

    @property
    def allowed(self) -> list[Any] | None:
        return self.details.get("allowed")

    @property
    def expected(self) -> str | None:
        return self.details.get("expected")

    @property
    def found(self) -> str | None:
        return self.details.get("found")

    @property
    def known(self) -> list[str] | None:
        return self.details.get("known")

    @property
    def tool(self) -> str | None:
        return self.details.get("tool")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary to send back to the model: the tool and one entry per issue."""
        issues = [_issue_dict(issue) for issue in self.errors]
        return {"tool": self.tool, "errors": issues}


def _issue_dict(issue: ToolArgumentError) -> dict[str, Any]:
    entry: dict[str, Any] = {"code": issue.code, "message": issue.message, **issue.location}
    for name in ("got", "allowed", "expected", "found", "known"):
        if name in issue.details:
            entry[name] = issue.details[name]
    return entry


def combine_argument_errors(issues: Sequence[ToolArgumentError], tool: str | None) -> ToolArgumentError:
    """One error for a whole call: the single issue's code, or ``invalid_arguments`` for several."""
    where = f" for tool {tool!r}" if tool else ""
    if len(issues) == 1:
        only = issues[0]
        details = {**only.details, "tool": tool}
        return ToolArgumentError(
            f"Invalid argument{where}: {only.message}",
            errors=issues, code=only.code, field=only.field, key=only.key, path=only.path, **details,
        )
    listed = " ".join(f"({n}) {issue.message}" for n, issue in enumerate(issues, 1))
    return ToolArgumentError(f"{len(issues)} invalid arguments{where}: {listed}", errors=issues, tool=tool)


class StrictModelError(ChatparseError, TypeError):
    """A ``StrictModel`` field is declared with a type that would compare loosely (a ``str`` Enum)."""

    code = "loose_type_in_strict_model"


class NearJSONError(ChatparseError, ValueError):
    """Text is neither a Python literal nor JSON (or is too large, too deep, not JSON-typed)."""

    code = "unreadable_value"


class ArgumentStreamError(ChatparseError, ValueError):
    """Why a streamed argument object is not complete: invalid JSON, a cut, a failed callback."""

    code = "invalid_argument_stream"


__all__ = [
    "ArgumentStreamError",
    "NearJSONError",
    "StrictModelError",
    "ToolArgumentError",
    "ToolDefinitionError",
    "UnknownToolError",
    "combine_argument_errors",
]
