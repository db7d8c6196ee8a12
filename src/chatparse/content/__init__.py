"""Content parsers: the registry and the built-in parsers (text, int, float, bool, json, xml-inline,
kv-lines, python-call-list) plus chatparse's named extensions."""

from chatparse.content.registry import (
    ContentParserSpec,
    get_content_parser,
    known_content_parsers,
    register_content_parser,
)

__all__ = ["ContentParserSpec", "get_content_parser", "known_content_parsers", "register_content_parser"]
