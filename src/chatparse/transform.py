"""Transforms: JSON-shaped templates whose whole-string ``"{name}"`` / ``"{name.key}"`` placeholders are
replaced by the parsed body (``content``) and named regex captures, type preserved."""

from __future__ import annotations

import warnings
from typing import Any

import regex

from chatparse.errors import TemplateError, TemplateWarning, TransformError

PLACEHOLDER = regex.compile(r"\{(\w+(?:\.\w+)*)\}")


class UndefinedPlaceholderError(TemplateError, KeyError):
    """A transform placeholder that no output can define, found at load. Also a ``KeyError``: transformers
    raises ``KeyError`` for it (on the first region), and code written for it catches that."""

    code = "undefined_placeholder"

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.message


def check_transform(transform: Any, *, field: str) -> None:
    """Reject any string mixing a placeholder with literal text (no interpolation), at load time."""
    if isinstance(transform, dict):
        for value in transform.values():
            check_transform(value, field=field)
    elif isinstance(transform, list):
        for value in transform:
            check_transform(value, field=field)
    elif isinstance(transform, str) and PLACEHOLDER.search(transform) and not PLACEHOLDER.fullmatch(transform):
        raise TemplateError(
            f"Field '{field}': transform string {transform!r} mixes a {{placeholder}} with literal text. "
            'Use either a whole-string placeholder (e.g. "{content}") or a plain literal; '
            "string interpolation is not supported.",
            code="transform_interpolation",
            field=field,
            key="transform",
        )


def placeholder_paths(transform: Any) -> set[str]:
    """The path of every whole-string placeholder in ``transform`` (``"content.args"`` for ``"{content.args}"``)."""
    if isinstance(transform, dict):
        return set().union(*(placeholder_paths(v) for v in transform.values())) if transform else set()
    if isinstance(transform, list):
        return set().union(*(placeholder_paths(v) for v in transform)) if transform else set()
    if isinstance(transform, str) and (m := PLACEHOLDER.fullmatch(transform)):
        return {m.group(1)}
    return set()


def placeholder_uses(transform: Any) -> int:
    """How many whole-string placeholders ``transform`` holds, each use counted (a shared dict counts per use)."""
    if isinstance(transform, dict):
        return sum(placeholder_uses(v) for v in transform.values())
    if isinstance(transform, list):
        return sum(placeholder_uses(v) for v in transform)
    return 1 if isinstance(transform, str) and PLACEHOLDER.fullmatch(transform) else 0


def check_copies(uses: int, *, field: str, limit: int) -> None:
    """A transform copies a value into its output once per placeholder use: more than ``limit`` uses would let
    a small output grow into a huge message (``Limits.transform_copies``)."""
    if uses > limit:
        raise TemplateError(
            f"Field '{field}': expected a transform with at most {limit} placeholder uses (Limits.transform_copies), "
            f"found {uses}: each use copies the region's value, so the field's value would be up to {uses} times "
            "the model's output. Use each placeholder once or twice.",
            code="transform_too_large", field=field, key="transform", uses=uses, limit=limit,
        )


def check_placeholders(transform: Any, *, field: str, groups: set[str], scalar_parser: str | None) -> None:
    """At load, for a transform applied to each region's value (not ``transform_each``, whose names come
    from the output): a placeholder no output can resolve is a ``TemplateError``. Its scope is the named
    groups of the field's patterns (always strings) and ``content``; ``scalar_parser`` names a parser whose
    value is never a dict (a path into it only warns: that rests on the parser's contract)."""
    for path in sorted(placeholder_paths(transform)):
        root, *keys = path.split(".")
        if root != "content" and root not in groups:
            raise UndefinedPlaceholderError(
                f"Field '{field}': transform placeholder '{{{path}}}' is not defined by any output: no named group "
                f"of the field's open or close pattern is called '{root}'. Available: {sorted({'content', *groups})}. "
                f"Capture it with (?P<{root}>...) in the open or close pattern, or use one of those.",
                code="undefined_placeholder", field=field, key="transform",
            )
        if keys and root != "content":
            raise TemplateError(
                f"Field '{field}': transform placeholder '{{{path}}}' cannot index into str at '{keys[0]}': "
                f"'{root}' is a named group, and a capture is always a string. End the path at '{{{root}}}'.",
                code="placeholder_not_a_dict", field=field, key="transform",
            )
        if keys and scalar_parser is not None:
            warnings.warn(
                f"Field '{field}': transform placeholder '{{{path}}}' cannot index into the {scalar_parser} "
                f"parser's value at '{keys[0]}' (it is never a dict), so every region of this field will fail "
                "(code placeholder_not_a_dict). Use '{content}' or a parser that yields a dict.",
                TemplateWarning, stacklevel=2,
            )


def apply_transform(transform: Any, scope: dict[str, Any], *, field: str) -> Any:
    """Fill ``transform`` from ``scope``. Unresolvable paths raise instead of emitting a broken value."""
    if isinstance(transform, dict):
        return {k: apply_transform(v, scope, field=field) for k, v in transform.items()}
    if isinstance(transform, list):
        return [apply_transform(v, scope, field=field) for v in transform]
    if not isinstance(transform, str):
        return transform
    whole = PLACEHOLDER.fullmatch(transform)
    if whole is None:
        return transform
    return _lookup(whole.group(1), scope, field)


def _lookup(path: str, scope: dict[str, Any], field: str) -> Any:
    # The messages start with transformers' own wording (code matching it keeps working), then the fix.
    root, *keys = path.split(".")
    if root not in scope:
        raise TransformError(
            f"Field '{field}': transform placeholder '{{{path}}}' is not defined. Available: {sorted(scope)}. "
            "Use one of those names, or capture it with a named group (?P<name>...) in the field's open or close "
            "pattern.",
            code="undefined_placeholder",
            field=field,
            key="transform",
        )
    value = scope[root]
    for key in keys:
        if not isinstance(value, dict):
            raise TransformError(
                f"Field '{field}': transform placeholder '{{{path}}}' cannot index into {type(value).__name__} "
                f"at '{key}'. Only a dict has keys: end the path before '{key}'.",
                code="placeholder_not_a_dict",
                field=field,
                key="transform",
            )
        if key not in value:
            raise TransformError(
                f"Field '{field}': transform placeholder '{{{path}}}' is missing key '{key}'. "
                f"Available: {sorted(map(str, value))}",
                code="placeholder_missing_key",
                field=field,
                key="transform",
            )
        value = value[key]
    return value
