"""A field's transform compiled once into a filler: the same value ``apply_transform`` gives, without
matching every string of the transform against the placeholder pattern per region. Whenever a path does
not resolve, the filler calls ``apply_transform``, so the errors (codes, wording) are that module's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatparse.transform import PLACEHOLDER, apply_transform

Filler = Callable[[dict[str, Any]], Any]


class _Unresolved(Exception):
    """A placeholder path does not resolve in this scope (``apply_transform`` says why)."""


def compile_transform(transform: Any, *, field: str) -> Filler:
    """``fill(scope)`` == ``apply_transform(transform, scope, field=field)``, errors included."""
    build = _builder(transform)

    def fill(scope: dict[str, Any]) -> Any:
        try:
            return build(scope)
        except _Unresolved:
            return apply_transform(transform, scope, field=field)

    return fill


def _builder(node: Any) -> Filler:
    if isinstance(node, dict):
        items = [(key, _builder(value)) for key, value in node.items()]
        return lambda scope: {key: build(scope) for key, build in items}
    if isinstance(node, list):
        parts = [_builder(value) for value in node]
        return lambda scope: [build(scope) for build in parts]
    whole = PLACEHOLDER.fullmatch(node) if isinstance(node, str) else None
    if whole is None:
        return lambda scope: node
    root, *keys = whole.group(1).split(".")
    return _getter(root, tuple(keys))


def _getter(root: str, keys: tuple[str, ...]) -> Filler:
    def get(scope: dict[str, Any]) -> Any:
        if root not in scope:
            raise _Unresolved
        value = scope[root]
        for key in keys:
            if not isinstance(value, dict) or key not in value:
                raise _Unresolved
            value = value[key]
        return value

    return get
