"""Content parsers: the registry, the built-in parsers (text, int, float, bool, json, xml-inline,
kv-lines, python-call-list) and chatparse's named extensions."""

from chatparse.content.builtin import register_builtin_parsers
from chatparse.content.registry import (
    ContentParserSpec,
    get_content_parser,
    known_content_parsers,
    register_content_parser,
)

register_builtin_parsers()

__all__ = ["ContentParserSpec", "get_content_parser", "known_content_parsers", "register_content_parser"]
