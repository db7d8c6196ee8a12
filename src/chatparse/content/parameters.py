"""Parameters read by ``xml-params`` for the parsers that hold several of them per call (``tagged-call``,
``xml-invokes``), with the text of every value a value parser read as anything but text, so the request's
tools decide what the value is (``engine.tool_typing``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatparse.content.args import WrittenArguments
from chatparse.content.xml_params import parse_xml_params

_VALUE_PARSER_KEYS = ("value_parsers", "default_parser")


def read_parameters(body: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``parse_xml_params(body, params)``; when its value parsers typed a value (by the type the model
    declared, or by reading every value as JSON), the result is a ``WrittenArguments`` holding each such
    value's text, so a parameter whose schema is ``string`` is the text the model wrote (``"12"``, ``"false"``)."""
    typed = parse_xml_params(body, params)
    if not any(key in params for key in _VALUE_PARSER_KEYS) or all(isinstance(v, str) for v in typed.values()):
        return typed
    text = parse_xml_params(body, {k: v for k, v in params.items() if k not in _VALUE_PARSER_KEYS})
    written: dict[tuple[str | int, ...], str] = {
        (key,): text[key] for key, value in typed.items() if not isinstance(value, str) and isinstance(text.get(key), str)
    }
    return WrittenArguments(typed, written)
