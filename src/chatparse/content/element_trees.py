"""``xml-element-tree``: a call's arguments written as nested elements named after the parameters, the way
MiniMax M3 writes them (every tag behind the namespace marker ``]<]minimax[>[``)::

    ]<]minimax[>[<city>Seoul]<]minimax[>[</city>]<]minimax[>[<lines>]<]minimax[>[<item>]<]minimax[>[<sku>pen
    ]<]minimax[>[</sku>]<]minimax[>[</item>]<]minimax[>[</lines>

A parameter is an element; its value is its text, or, when it has child elements, an object of them (a list
when every child is a list item, ``<item>``, or when a name repeats). Read in one pass over the tags
(``str.find`` between them: linear time), never evaluated. A chatparse extension configured through
``content_args``; transformers has nothing like it (its ``xml-inline`` reads flat tags only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import regex

from chatparse.content.args import WrittenArguments, check_allowed, check_choice, excerpt
from chatparse.content.bare_key_objects import _scalar  # a JSON number, true, false or null, else the text
from chatparse.content.registry import register_extensions

Args = Mapping[str, Any]
MAX_DEPTH = 128
_NAME = regex.compile(r"(/?)([^\s<>/]+)>")
_ARGS: dict[str, type | tuple[type, ...]] = {"prefix": str, "list_item": str, "nested_scalars": str, "trailer": str}
_SCALARS = ("text", "json")


class _Node:
    """An element being read: its name, where its inner text starts, the text written directly in it and
    its children in order."""

    __slots__ = ("children", "name", "start", "text")

    def __init__(self, name: str, start: int) -> None:
        self.name = name
        self.start = start
        self.text: list[str] = []
        self.children: list[tuple[str, Any]] = []


class _Read:
    """A value the reader structured (an object or a list) or typed (a nested JSON scalar), with the inner
    text it was read from; ``_unwrap`` takes it apart once the whole call is read."""

    __slots__ = ("raw", "value")

    def __init__(self, value: Any, raw: str) -> None:
        self.value = value
        self.raw = raw


def _unwrap(value: Any, path: tuple[str | int, ...], written: dict[tuple[str | int, ...], str]) -> Any:
    """``value`` without its ``_Read`` wrappers; each wrapper's text goes to ``written`` at its path."""
    if isinstance(value, _Read):
        written[path] = value.raw
        value = value.value
    if isinstance(value, dict):
        return {key: _unwrap(item, (*path, key), written) for key, item in value.items()}
    if isinstance(value, list):
        return [_unwrap(item, (*path, index), written) for index, item in enumerate(value)]
    return value


def _free_key(taken: Mapping[str, Any]) -> str:
    key = "$text"
    while key in taken:
        key = "$" + key
    return key


class _Tree:
    def __init__(self, args: Args) -> None:
        self.open = args.get("prefix", "") + "<"
        self.item = args.get("list_item", "item")
        self.json_leaves = args.get("nested_scalars", "text") == "json"

    def value(self, node: _Node, depth: int, raw: str) -> Any:
        """The value of a closed element whose inner text is ``raw`` (``depth`` 0: a parameter, read as raw
        text when it is a leaf); a value read as anything but its text is a ``_Read`` that keeps ``raw``."""
        text = "".join(node.text)
        if not node.children:
            scalar = _scalar(text) if depth > 0 and self.json_leaves else text
            return scalar if isinstance(scalar, str) else _Read(scalar, raw)
        return _Read(self.structure(node, text), raw)

    def structure(self, node: _Node, text: str) -> Any:
        names = [name for name, _ in node.children]
        if self.item and all(name == self.item for name in names):
            items = [value for _, value in node.children]
            return items if not text.strip() else {self.item: items, "$text": text}
        out: dict[str, Any] = {}
        repeated: set[str] = set()
        for name, child in node.children:
            if name not in out:
                out[name] = child
            elif name in repeated:
                out[name].append(child)
            else:
                out[name] = [out[name], child]
                repeated.add(name)
        if text.strip():
            out[_free_key(out)] = text
        return out


def parse_xml_element_tree(body: str, args: Args) -> WrittenArguments:
    """A call's arguments as nested elements named after the parameters (MiniMax M3).

    ``content_args``: ``prefix`` (a literal written before every tag, ``]<]minimax[>[``; default none),
    ``list_item`` (the name of list-item elements, default ``item``: an element whose children are all
    ``<item>`` is a list; ``""`` turns this off), ``nested_scalars`` (``"text"``, the default: every leaf is
    its text; ``"json"``: a leaf below the top level that reads as a JSON number, ``true``, ``false`` or
    ``null`` is that value, since a schema types only the top-level parameters), ``trailer`` (a literal that
    may end the body, e.g. the call's close when the region left it in).

    Top-level parameters that are leaves stay raw text (typed later by the request's tools). Every value read
    as anything but its text (an object, a list, a nested JSON scalar) keeps the text it was read from in
    the result's ``written`` (a ``WrittenArguments``), so a parameter whose schema is ``string`` gets its
    text back, exactly as written (``engine.tool_typing``). A name that
    repeats inside one parent gives a list; non-blank text beside child elements is kept under ``$text``
    (``$$text`` if that name is taken). Text between top-level parameters, an element closed by another
    name, an unclosed element (a cut) and nesting deeper than 128 raise ``ValueError``, so a broken call is
    reported instead of read as a call with fewer arguments.
    """
    tree = _Tree(args)
    trailer: str = args.get("trailer", "")
    text = body
    stripped = text.rstrip()
    if trailer and stripped.endswith(trailer):
        text = stripped[: -len(trailer)]
    out: dict[str, Any] = {}
    stack: list[_Node] = []
    pos = 0
    opener = tree.open
    while True:
        at = text.find(opener, pos)
        chunk = text[pos : at if at >= 0 else len(text)]
        if stack:
            stack[-1].text.append(chunk)
        elif chunk.strip():
            raise ValueError(f"xml-element-tree: text outside the parameters: {excerpt(chunk)}")
        if at < 0:
            break
        tag = _NAME.match(text, at + len(opener))
        if tag is None:
            if stack:  # a '<' the marker precedes but no tag follows: data of the open element
                stack[-1].text.append(opener)
                pos = at + len(opener)
                continue
            raise ValueError(f"xml-element-tree: not an element tag: {excerpt(text[at : at + 40])}")
        closing, name = tag.group(1) == "/", tag.group(2)
        pos = tag.end()
        if not closing:
            if len(stack) >= MAX_DEPTH:
                raise ValueError(f"xml-element-tree: elements nested deeper than {MAX_DEPTH} levels")
            stack.append(_Node(name, pos))
            continue
        if not stack or stack[-1].name != name:
            expected = f"</{stack[-1].name}>" if stack else "an element"
            raise ValueError(f"xml-element-tree: </{name}> closes nothing open (expected {expected})")
        node = stack.pop()
        value = tree.value(node, len(stack), text[node.start : at])
        if stack:
            stack[-1].children.append((name, value))
        else:
            out[name] = value  # a repeated top-level parameter keeps its last value
    if stack:
        raise ValueError(f"xml-element-tree: <{stack[-1].name}> is not closed (the text ends inside it)")
    written: dict[tuple[str | int, ...], str] = {}
    return WrittenArguments(_unwrap(out, (), written), written)


def validate_xml_element_tree_args(args: Args) -> None:
    """Load-time check of ``xml-element-tree`` content_args."""
    check_allowed("xml-element-tree", args, _ARGS)
    check_choice("xml-element-tree", args, "nested_scalars", _SCALARS)


EXTENSIONS = {"xml-element-tree": (parse_xml_element_tree, validate_xml_element_tree_args, None)}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
