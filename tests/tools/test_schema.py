"""Tool definitions → Tool: dicts, typed functions (parity with transformers), pydantic models, ToolSet."""

# ruff: noqa: UP007, UP045  (the typing.Optional/Union spellings are under test)

from __future__ import annotations

import enum
from typing import Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel
from transformers.utils.chat_parsing import parse_response as reference_parse_response
from transformers.utils.chat_template_utils import get_json_schema

import chatparse
from chatparse.tools import (
    Tool,
    ToolArgumentError,
    ToolDefinitionError,
    ToolSet,
    UnknownToolError,
    as_tool,
    function_json_schema,
    tool_from_dict,
    tool_parameter_properties,
)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Mixed(enum.Enum):
    B = "b"
    A = 1


def basic(a: int, b: float, c: str, d: bool, e: Optional[int] = None) -> None:
    """Basic scalars.

    Longer description
    over two lines.

    Args:
        a: the a
        b: the b
        c: the c
        d: the d
        e: the e
    """


def containers(
    g: list[int], h: dict[str, int], i: tuple[int, str], l: list, m: dict, t: tuple = ()  # type: ignore[type-arg]  # noqa: E741
) -> list[str]:
    """Containers.

    Args:
        g: list of ints
        h: map
        i: pair
        l: bare list
        m: bare dict
        t: bare tuple
    """
    return []


def unions(
    j: Union[int, str],
    k: Any,
    u: float | int,
    x: Optional[list[str]] = None,
    y: Union[int, str, None] = None,
    w: Union[list[int], dict[str, int], None] = None,
    n: None = None,
) -> int:
    """Unions.

    Args:
        j: int or str
        k: anything
        u: a number
        x: optional list
        y: optional int or str
        w: optional list or map
        n: always null
    """
    return 0


def choices(
    f: Literal["x", "y"],
    v: Literal["a", 1],
    z: Literal["a", None],
    c: Color,
    mixed: Mixed,
    o: Optional[Literal["p", "q"]] = None,
    q: list[Literal["r"]] | None = None,
    s: str = "p",
) -> None:
    """Choices.

    Args:
        f: a literal
        v: a mixed literal
        z: a literal with None
        c: an enum
        mixed: a mixed enum
        o: optional literal
        q: list of literal
        s: a string (choices: ["p", "q"])
    """


def multiline(n: int) -> None:
    """Multi-line argument description.

    Args:
        n: first line
            continued here
    """


@pytest.mark.parametrize("function", [basic, containers, unions, choices, multiline])
def test_function_schema_matches_transformers_get_json_schema(function: Any) -> None:
    assert function_json_schema(function) == get_json_schema(function)


def test_function_schema_shape() -> None:
    spec = function_json_schema(unions)["function"]
    props = spec["parameters"]["properties"]
    assert props["j"] == {"type": ["integer", "string"], "description": "int or str"}
    assert props["x"] == {"type": "array", "items": {"type": "string"}, "nullable": True, "description": "optional list"}
    assert props["w"]["anyOf"][1] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["k"] == {"description": "anything"}
    assert spec["parameters"]["required"] == ["j", "k", "u"]
    assert spec["return"] == {"type": "integer"}


def test_choices_become_enums() -> None:
    props = function_json_schema(choices)["function"]["parameters"]["properties"]
    assert props["f"]["enum"] == ["x", "y"]
    assert props["v"]["type"] == ["string", "integer"]
    assert props["c"] == {"type": "string", "enum": ["red", "green"], "description": "an enum"}
    assert props["o"]["nullable"] is True
    assert props["s"] == {"type": "string", "enum": ["p", "q"], "description": "a string"}


def _no_doc(a: int) -> None:
    pass


def _no_hint(a) -> None:  # type: ignore[no-untyped-def]
    """Doc.

    Args:
        a: x
    """


def _undocumented_arg(a: int, b: int) -> None:
    """Doc.

    Args:
        a: x
    """


def _set_arg(a: set[int]) -> None:
    """Doc.

    Args:
        a: x
    """


def _one_tuple(a: tuple[int]) -> None:
    """Doc.

    Args:
        a: x
    """


@pytest.mark.parametrize(
    ("function", "code"),
    [
        (_no_doc, "missing_docstring"),
        (_no_hint, "missing_type_hint"),
        (_undocumented_arg, "missing_argument_description"),
        (_set_arg, "unsupported_type_hint"),
        (_one_tuple, "unsupported_type_hint"),
    ],
)
def test_function_definition_errors_are_named(function: Any, code: str) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        function_json_schema(function)
    assert caught.value.code == code


def test_dict_wrapped_and_bare_are_the_same_tool() -> None:
    bare = {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}
    wrapped = {"type": "function", "function": bare}
    assert tool_from_dict(bare) == tool_from_dict(wrapped)
    assert tool_from_dict(wrapped).to_dict() == wrapped


def test_dict_without_parameters_takes_none() -> None:
    tool = tool_from_dict({"name": "ping"})
    assert tool.properties == {}
    assert tool.coerce({}) == {}


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"description": "no name"}, "missing_tool_name"),
        ({"type": "retrieval", "function": {"name": "f"}}, "unsupported_tool"),
        ({"name": "f", "parameters": "object"}, "invalid_tool_definition"),
    ],
)
def test_bad_dicts_are_named(spec: dict[str, Any], code: str) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        tool_from_dict(spec)
    assert caught.value.code == code


class SearchDocs(BaseModel):
    """Search the documents."""

    query: str
    limit: int = 5
    color: Color = Color.RED


def test_pydantic_model_tool() -> None:
    tool = as_tool(SearchDocs)
    assert tool.name == "SearchDocs"
    assert tool.description == "Search the documents."
    assert tool.model is SearchDocs
    assert tool.parameters["required"] == ["query"]
    assert tool.coerce({"query": "q", "limit": "3", "color": "green"}) == {"query": "q", "limit": 3, "color": "green"}
    with pytest.raises(ToolArgumentError) as caught:
        tool.coerce({"query": "q", "color": "Green"})
    assert caught.value.code == "invalid_choice"
    assert caught.value.allowed == ["red", "green"]


def test_toolset_lookup_and_unknown_name() -> None:
    tools = ToolSet([basic, SearchDocs, {"type": "function", "function": {"name": "write_file"}}])
    assert tools.names == ["basic", "SearchDocs", "write_file"]
    assert "basic" in tools and len(tools) == 3
    assert isinstance(tools["write_file"], Tool)
    with pytest.raises(UnknownToolError) as caught:
        tools["Write_File"]
    error = caught.value
    assert error.code == "unknown_tool"
    assert error.known == ["SearchDocs", "basic", "write_file"]
    assert "'write_file'" in str(error)  # the message lists the known names
    assert isinstance(error, KeyError)


def test_toolset_rejects_duplicate_names() -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        ToolSet([basic, basic])
    assert caught.value.code == "duplicate_tool"


def test_toolset_coerce_names_the_tool() -> None:
    tools = ToolSet([basic])
    assert tools.coerce("basic", {"a": "1", "b": "2.5", "c": "x", "d": "true"}) == {"a": 1, "b": 2.5, "c": "x", "d": True}
    with pytest.raises(ToolArgumentError) as caught:
        tools.coerce("basic", {"a": "one", "b": 1, "c": "x", "d": True})
    assert caught.value.tool == "basic"
    assert "tool 'basic'" in str(caught.value)


class _Holder:
    def method(self, a: int) -> None:
        """A method.

        Args:
            a: x
        """


def test_tool_parameter_properties_accepts_what_parse_response_accepts() -> None:
    tools = [
        basic,
        _Holder().method,
        {"type": "function", "function": {"name": "w", "parameters": {"properties": {"p": {"type": "string"}}}}},
        {"name": "bare", "parameters": {"type": "object"}},
        {"function": {"description": "no name: skipped, as the reference does"}},
        SearchDocs,
    ]
    props = tool_parameter_properties(tools)
    assert list(props) == ["basic", "method", "w", "bare", "SearchDocs"]
    assert props["basic"]["a"] == {"type": "integer", "description": "the a"}
    assert props["method"] == {"a": {"type": "integer", "description": "x"}}
    assert props["w"] == {"p": {"type": "string"}}
    assert props["bare"] == {}
    assert tool_parameter_properties(None) == {}


@pytest.mark.parametrize("entry", [42, "get_weather", None], ids=["int", "str", "none"])
def test_tool_parameter_properties_rejects_an_entry_that_is_no_tool(entry: Any) -> None:
    """A deliberate difference (docs/compatibility.md): transformers skips such an entry, leaving that
    tool's arguments untyped without a word."""
    with pytest.raises(ToolDefinitionError) as caught:
        tool_parameter_properties([{"name": "f"}, entry])
    error = caught.value
    assert (error.code, error.path) == ("unsupported_tool", "tools[1]")
    assert str(error) == (
        f"tools[1]: Expected a tool dict, a function or a pydantic model; found {type(entry).__name__}. Remove the "
        "entry or pass a tool dict."
    )


def test_parse_response_rejects_a_non_tool_entry_where_the_reference_ignores_it() -> None:
    template = {"start_anchor": "<|a|>", "fields": {"x": {"open": "<x>", "close": "</x>"}}}
    tools = [42, {"name": "f", "parameters": {"properties": {"n": {"type": "integer"}}}}]
    assert reference_parse_response("<x>1</x>", template, prefix="", tools=tools) == {"x": "1"}
    with pytest.raises(ToolDefinitionError, match=r"^tools\[0\]: "):
        chatparse.parse_response("<x>1</x>", template, prefix="", tools=tools)


def test_a_function_tool_error_in_a_list_names_the_entry() -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        tool_parameter_properties([basic, _no_doc])
    assert (caught.value.code, caught.value.path) == ("missing_docstring", "tools[1]")
