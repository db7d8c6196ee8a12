"""``xml-text``: an XML element's text as a value: CDATA sections taken verbatim, character and entity
references decoded outside them. MiniCPM5 writes a parameter value that holds ``<``, ``&`` or a newline as
``<![CDATA[...]]>`` and any other value raw; used as the ``default_parser`` of ``xml-params``. A
chatparse extension (transformers' value parsers are ``text``, ``json`` and the scalars)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import regex

from chatparse.content.args import check_allowed

Args = Mapping[str, Any]
_CDATA_OPEN = "<![CDATA["
_CDATA_CLOSE = "]]>"
# The XML references: the five predefined entities and decimal / hexadecimal character references.
_REFERENCE = regex.compile(r"&(?:amp|lt|gt|quot|apos|#[0-9]{1,7}|#x[0-9A-Fa-f]{1,6});")
_ARGS: dict[str, type | tuple[type, ...]] = {"strip": bool}


def _decode(text: str) -> str:
    """XML references outside CDATA decoded (a bare ``&`` that starts no reference stays as written)."""
    return _REFERENCE.sub(lambda m: html.unescape(m.group()), text) if "&" in text else text


def parse_xml_text(text: str, args: Args) -> str:
    """An XML element's text: ``<![CDATA[...]]>`` sections verbatim (several may follow one another),
    the XML references outside them decoded (``&amp;`` ``&lt;`` ``&gt;`` ``&quot;`` ``&apos;`` ``&#N;``
    ``&#xN;``; other ``&`` text kept). ``content_args``: ``strip`` (default false) strips the whitespace
    around the text outside CDATA, as a lenient reader of ``<p> 3 </p>`` would. A CDATA section that is
    never closed raises ``ValueError`` (the value was cut)."""
    strip = args.get("strip", False)
    if _CDATA_OPEN not in text:
        return _decode(text.strip() if strip else text)
    parts: list[str] = []
    pos = 0
    while True:
        at = text.find(_CDATA_OPEN, pos)
        outside = text[pos : at if at >= 0 else len(text)]
        if strip:
            outside = outside.strip()
        parts.append(_decode(outside))
        if at < 0:
            break
        end = text.find(_CDATA_CLOSE, at + len(_CDATA_OPEN))
        if end < 0:
            raise ValueError("xml-text: a CDATA section is not closed (the value was cut inside it)")
        parts.append(text[at + len(_CDATA_OPEN) : end])
        pos = end + len(_CDATA_CLOSE)
    return "".join(parts)


def validate_xml_text_args(args: Args) -> None:
    """Load-time check of ``xml-text`` content_args."""
    check_allowed("xml-text", args, _ARGS)


EXTENSIONS = {"xml-text": (parse_xml_text, validate_xml_text_args, None)}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    from chatparse.content.registry import register_extensions

    register_extensions(EXTENSIONS)


register()
