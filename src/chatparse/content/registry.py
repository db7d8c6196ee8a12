"""The closed, name-keyed registry of content parsers.

A content parser turns a region's raw body into its value: ``func(body, args) -> value``. It
raises ``ValueError`` (or a ``ChatparseError``) on bad input; the engine wraps anything else.
Parsers whose value is a list of items (tool calls) may also register ``recover``, which parses item
by item and returns the items that parse plus the others as ``BadItem``s with their raw text.
Templates never run code: they name a registered parser, and extensions register by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

ParseFunc = Callable[[str, Mapping[str, Any]], Any]
ArgsValidator = Callable[[Mapping[str, Any]], None]


@dataclass(frozen=True)
class BadItem:
    """One item of a list region that could not be read: its raw text, why, and whether it runs to the
    end of the region (``at_end``: the text was cut inside it)."""

    raw: str
    error: str
    at_end: bool = False
    code: str = "content_parse_failed"


@dataclass(frozen=True)
class Repaired:
    """What a parser returns for a body it could read only after repairing it (a tag the model dropped):
    the value, and each repair as ``(code, note)``. The engine keeps the value and lists every repair
    under ``message["repaired"]`` as ``{"field", "code", "raw"}``, so a repaired call is never silent."""

    value: Any
    repairs: tuple[tuple[str, str], ...]


# ``recover(body, args) -> ([(value, raw text), ...], [BadItem, ...])`` in the order of the body.
RecoverFunc = Callable[[str, Mapping[str, Any]], tuple[list[tuple[Any, str]], list[BadItem]]]


@dataclass(frozen=True)
class ContentParserSpec:
    """A registered content parser.

    ``streamable`` parsers produce the body text itself (chunks stream with ``dirty=False``).
    ``compatible`` parsers exist in transformers too; a template using any other parser is
    chatparse-only. ``validate_args`` checks ``content_args`` at template load time and raises
    ``ValueError`` with a message naming the bad key.
    """

    name: str
    parse: ParseFunc
    streamable: bool = False
    compatible: bool = False
    validate_args: ArgsValidator | None = None
    description: str = ""
    recover: RecoverFunc | None = None


_REGISTRY: dict[str, ContentParserSpec] = {}


def register_content_parser(
    name: str,
    parse: ParseFunc,
    *,
    streamable: bool = False,
    validate_args: ArgsValidator | None = None,
    description: str = "",
    compatible: bool = False,
    replace: bool = False,
    recover: RecoverFunc | None = None,
) -> ContentParserSpec:
    """Register ``parse`` under ``name``. Re-registering a name needs ``replace=True``."""
    if not name or not isinstance(name, str):
        raise ValueError(f"content parser name must be a non-empty string, got {name!r}")
    if name in _REGISTRY and not replace:
        raise ValueError(f"content parser {name!r} is already registered; pass replace=True to override it")
    spec = ContentParserSpec(
        name=name,
        parse=parse,
        streamable=streamable,
        compatible=compatible,
        validate_args=validate_args,
        description=description,
        recover=recover,
    )
    _REGISTRY[name] = spec
    return spec


def register_extensions(table: Mapping[str, tuple[ParseFunc, ArgsValidator | None, RecoverFunc | None]]) -> None:
    """Register a module's table of ``name -> (parse, validate_args, recover)`` extensions (idempotent);
    each parser's description is the first line of its docstring."""
    for name, (parse, check, recover) in table.items():
        register_content_parser(name, parse, validate_args=check, replace=True, recover=recover,
                                description=(parse.__doc__ or "").strip().split("\n")[0])


def get_content_parser(name: str) -> ContentParserSpec:
    """The parser registered as ``name``; ``KeyError`` if there is none."""
    return _REGISTRY[name]


def known_content_parsers() -> list[str]:
    """Names of every registered content parser, sorted."""
    return sorted(_REGISTRY)
