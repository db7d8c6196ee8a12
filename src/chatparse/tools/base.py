"""``ToolInputBase`` (lenient at the model boundary) and ``StrictModel`` (strict inside the system).

Every ``ToolInputBase`` subclass gets the representation coercion of ``coerce_arguments``
from its own annotations before validation; ``StrictModel`` coerces nothing at all.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from enum import Enum
from typing import Any, Self, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from chatparse.tools.coerce import find_argument_issues
from chatparse.tools.errors import (
    StrictModelError,
    ToolArgumentError,
    ToolDefinitionError,
    combine_argument_errors,
)
from chatparse.tools.jsonvalue import format_path, short_repr

_PYDANTIC_CODES = {
    "missing": "missing_argument",
    "extra_forbidden": "unknown_argument",
    "literal_error": "invalid_choice",
    "enum": "invalid_choice",
}
_OUR_CODES = frozenset({"invalid_choice", "missing_argument", "unknown_argument", "wrong_type"})


class ToolInputBase(BaseModel):
    """Base class for tool input models: coerce representation, then validate; extras forbidden.

    ``Model.from_arguments(arguments)`` raises ``ToolArgumentError`` listing every issue;
    plain ``Model.model_validate`` raises pydantic's ``ValidationError`` whose error types
    are the same codes (``invalid_choice`` with ``allowed`` in ``ctx``, ...).
    """

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _coerce_representation(cls, data: Any) -> Any:
        if not isinstance(data, (Mapping, str)):
            return data  # an instance or something pydantic itself will reject
        arguments, issues = find_argument_issues(data, _parameters_schema(cls))
        if issues:
            raise ValidationError.from_exception_data(cls.__name__, [_line_error(i) for i in issues])
        return arguments

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any] | str) -> Self:
        """Validate model-written arguments (a dict or its JSON/Python-literal text)."""
        try:
            return cls.model_validate(arguments)
        except ValidationError as problem:
            raise validation_to_tool_error(problem, tool=cls.__name__) from None


@functools.cache
def _parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    try:
        return model.model_json_schema()
    except Exception as problem:  # a field type with no JSON Schema cannot be coerced or sent
        raise ToolDefinitionError(
            f"Cannot build a JSON Schema for {model.__name__}: {problem}",
            code="unsupported_type_hint", field=model.__name__,
        ) from None


def _line_error(issue: ToolArgumentError) -> InitErrorDetails:
    context = {k: _printable(v) for k, v in issue.details.items() if k != "loc"}
    return InitErrorDetails(
        type=PydanticCustomError(issue.code, issue.message, context),
        loc=tuple(issue.details.get("loc", ())),
        input=issue.details.get("got"),
    )


def _printable(value: Any) -> Any:
    """``value``, or its short repr when ``str`` fails on it (an integer past the 4,300-digit limit, a list
    nested past the recursion limit): pydantic renders every context value and would print the failure."""
    try:
        str(value)
    except (ValueError, RecursionError):
        return short_repr(value)
    return value


def validation_to_tool_error(problem: ValidationError, *, tool: str | None = None) -> ToolArgumentError:
    """Turn a pydantic ``ValidationError`` into one ``ToolArgumentError`` with named issues."""
    issues = [_issue_from_pydantic(error) for error in problem.errors(include_url=False)]
    return combine_argument_errors(issues, tool)


def _issue_from_pydantic(error: Any) -> ToolArgumentError:
    loc = tuple(error["loc"])
    where = format_path(loc)
    kind = error["type"]
    context = dict(error.get("ctx") or {})
    field = loc[0] if loc and isinstance(loc[0], str) else None
    key = loc[-1] if loc and isinstance(loc[-1], str) else None
    if kind in _OUR_CODES:
        return ToolArgumentError(error["msg"], code=kind, field=field, key=key, path=where, loc=loc, **context)
    code = _PYDANTIC_CODES.get(kind) or _generic_code(kind)
    if code == "invalid_choice":
        context.setdefault("got", error.get("input"))
    return ToolArgumentError(
        f"{where}: {error['msg']}.", code=code, field=field, key=key, path=where, loc=loc,
        pydantic_type=kind, **context,
    )


def _generic_code(kind: str) -> str:
    return "wrong_type" if kind.endswith(("_type", "_parsing")) else "invalid_value"


class StrictModel(BaseModel):
    """For state the system itself produces: strict types, no extras, checked assignment.

    Nothing is coerced (``"1"`` is not an ``int``, ``"draft"`` is not ``Phase.DRAFT``), and a
    field typed with a ``str``-mixin Enum is refused at class definition, because such a
    member silently equals its plain string (``Status.DONE == "done"``).
    """

    model_config = ConfigDict(strict=True, extra="forbid", validate_assignment=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        for name, info in cls.model_fields.items():
            loose = _string_enum_in(info.annotation)
            if loose is not None:
                raise StrictModelError(
                    f"{cls.__name__}.{name}: expected a plain Enum; found {loose.__name__}, a str Enum that "
                    f"compares equal to plain strings. Declare it as 'class {loose.__name__}(Enum)'.",
                    field=name,
                )


def _string_enum_in(annotation: Any) -> type[Enum] | None:
    """The first ``str``-mixin Enum class inside an annotation (``Optional[X]``, ``list[X]``...)."""
    if isinstance(annotation, type) and issubclass(annotation, Enum) and issubclass(annotation, str):
        return annotation
    for arg in get_args(annotation):
        found = _string_enum_in(arg)
        if found is not None:
            return found
    return None


__all__ = ["StrictModel", "ToolInputBase", "validation_to_tool_error"]
