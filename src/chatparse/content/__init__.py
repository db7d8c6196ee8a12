"""Content parsers: the registry, the built-in parsers (text, int, float, bool, json, xml-inline,
kv-lines, python-call-list) and chatparse's named extensions, one module per syntax they read: JSON
call containers (``json_calls``), Python call lists (``python_calls``), XML-like parameters
(``xml_params``), objects with bare keys and delimited strings (``bare_key_objects``)."""

from chatparse.content.builtin import register_builtin_parsers
from chatparse.content.registry import (
    ContentParserSpec,
    get_content_parser,
    known_content_parsers,
    register_content_parser,
)

register_builtin_parsers()

# Named extensions for formats the v1 builtins cannot express (imported for their registrations).
from chatparse.content import (  # noqa: E402, F401
    bare_key_objects,
    citations,
    element_trees,
    escaped_newlines,
    function_heads,
    json_calls,
    python_calls,
    tagged_calls,
    xml_invokes,
    xml_params,
    xml_repairs,
    xml_text,
)

__all__ = ["ContentParserSpec", "get_content_parser", "known_content_parsers", "register_content_parser"]
