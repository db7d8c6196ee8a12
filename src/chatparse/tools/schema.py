"""Tool definitions → one normalized ``Tool`` (name, description, JSON-Schema parameters).

Accepts OpenAI-style dicts (wrapped or bare), typed Python functions with Google-style
docstrings (schema conventions of transformers' ``get_json_schema``) and pydantic models.
"""

from __future__ import annotations

import difflib
import inspect
import json
import re
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import docstring_parser
from pydantic import BaseModel

from chatparse.tools.coerce import coerce_arguments
from chatparse.tools.errors import ToolDefinitionError, UnknownToolError

ToolLike = Union["Tool", Mapping[str, Any], Callable[..., Any], type[BaseModel]]

_BASIC_TYPES: dict[Any, str] = {int: "integer", float: "number", str: "string", bool: "boolean"}
_CHOICES = re.compile(r"\s*\(choices:\s*(\[.*?\])\)\s*$", re.DOTALL)
_EMPTY_PARAMETERS: Mapping[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class Tool:
    """A tool as the model sees it; ``function``/``model`` keep the Python source if any."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    returns: Mapping[str, Any] | None = None
    function: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    model: type[BaseModel] | None = field(default=None, compare=False, repr=False)

    @property
    def properties(self) -> dict[str, Any]:
        """The parameters' ``properties`` (``{}`` when the tool takes none)."""
        props = self.parameters.get("properties")
        return dict(props) if isinstance(props, Mapping) else {}

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "function", "function": {...}}``, the shape chat templates and OpenAI take."""
        spec: dict[str, Any] = {"name": self.name, "description": self.description}
        spec["parameters"] = dict(self.parameters)
        if self.returns is not None:
            spec["return"] = dict(self.returns)
        return {"type": "function", "function": spec}

    def coerce(self, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """``coerce_arguments`` against this tool's parameters; errors name the tool."""
        return coerce_arguments(arguments, self.parameters, tool=self.name)


def as_tool(obj: ToolLike) -> Tool:
    """Normalize any supported tool definition into a ``Tool``."""
    if isinstance(obj, Tool):
        return obj
    if isinstance(obj, Mapping):
        return tool_from_dict(obj)
    if isinstance(obj, type) and issubclass(obj, BaseModel):
        return tool_from_model(obj)
    if callable(obj):
        return tool_from_function(obj)
    raise ToolDefinitionError(
        f"Expected a tool dict, a function or a pydantic model; found {type(obj).__name__}.",
        code="unsupported_tool",
    )


def tool_from_dict(spec: Mapping[str, Any]) -> Tool:
    """From ``{"type": "function", "function": {...}}`` or the bare function dict."""
    if "function" in spec:
        if spec.get("type", "function") != "function":
            raise ToolDefinitionError(
                f"Expected a tool of type 'function'; found type {spec.get('type')!r}.", code="unsupported_tool"
            )
        spec = spec["function"]
        if not isinstance(spec, Mapping):
            raise ToolDefinitionError("Expected 'function' to be an object.", code="invalid_tool_definition")
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ToolDefinitionError(
            f"Expected a non-empty string 'name'; found {name!r}.", code="missing_tool_name", field="name"
        )
    description = spec.get("description", "")
    parameters = spec.get("parameters", _EMPTY_PARAMETERS)
    if not isinstance(description, str) or not isinstance(parameters, Mapping):
        raise ToolDefinitionError(
            f"Tool {name!r}: expected a string 'description' and an object 'parameters'.",
            code="invalid_tool_definition", field=name,
        )
    returns = spec.get("return")
    return Tool(name, description, parameters, returns if isinstance(returns, Mapping) else None)


def tool_from_model(model: type[BaseModel], *, name: str | None = None) -> Tool:
    """From a pydantic model: its class name, its docstring and its JSON Schema."""
    schema = dict(model.model_json_schema())
    schema.pop("title", None)
    description = schema.pop("description", None) or inspect.getdoc(model) or ""
    return Tool(name or model.__name__, description, schema, model=model)


def tool_from_function(function: Callable[..., Any]) -> Tool:
    """From type hints and a Google-style docstring (``Args:`` describes every parameter)."""
    name = getattr(function, "__name__", type(function).__name__)
    doc = inspect.getdoc(function)
    if not doc:
        raise ToolDefinitionError(
            f"Cannot generate JSON schema for {name} because it has no docstring! Add one with an 'Args:' section.",
            code="missing_docstring", field=name,
        )
    parsed = docstring_parser.parse(doc, style=docstring_parser.DocstringStyle.GOOGLE)
    hints = _type_hints(function, name)
    parameters = _parameters_schema(function, name, hints, _arg_descriptions(parsed))
    description = "\n\n".join(p for p in (parsed.short_description, parsed.long_description) if p)
    returns = _returns_schema(hints, parsed, name)
    return Tool(name, description, parameters, returns, function=function)


def function_json_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """The ``{"type": "function", "function": {...}}`` dict for a typed, documented function."""
    return tool_from_function(function).to_dict()


def _type_hints(function: Callable[..., Any], name: str) -> dict[str, Any]:
    try:
        return get_type_hints(function)
    except Exception as problem:  # unresolvable forward references and the like
        raise ToolDefinitionError(
            f"Cannot read the type hints of {name!r}: {problem}", code="unsupported_type_hint", field=name
        ) from None


def _arg_descriptions(parsed: Any) -> dict[str, str]:
    return {p.arg_name: " ".join((p.description or "").split()) for p in parsed.params}


def _parameters_schema(
    function: Callable[..., Any], name: str, hints: dict[str, Any], descriptions: dict[str, str]
) -> dict[str, Any]:
    skipped = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    params = [p for p in inspect.signature(function).parameters.values() if p.kind not in skipped]
    # Checked in transformers' order (every hint, then every schema, then every description), so a function
    # with several faults fails on the same one there and here.
    for param in params:
        if param.name not in hints:
            raise ToolDefinitionError(
                f"Argument {param.name} is missing a type hint in function {name}. Add one.",
                code="missing_type_hint", field=name, key=param.name,
            )
    properties = {p.name: type_hint_schema(hints[p.name], where=f"{name}({p.name})") for p in params}
    for key, property_schema in properties.items():
        _describe_parameter(property_schema, key, name, descriptions)
    required = [p.name for p in params if p.default is inspect.Parameter.empty]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _describe_parameter(schema: dict[str, Any], param: str, name: str, descriptions: dict[str, str]) -> None:
    if not descriptions.get(param):
        raise ToolDefinitionError(
            f"Cannot generate JSON schema for {name} because the docstring has no description for the argument "
            f"'{param}'. Add '{param}: <description>' under 'Args:'.",
            code="missing_argument_description", field=name, key=param,
        )
    description = descriptions[param]
    if choices := _CHOICES.search(description):
        schema["enum"] = json.loads(choices.group(1))
        description = description[: choices.start()]
    schema["description"] = description


def _returns_schema(hints: dict[str, Any], parsed: Any, name: str) -> dict[str, Any] | None:
    if "return" not in hints:
        return None
    schema = type_hint_schema(hints["return"], where=f"{name} return")
    if parsed.returns is not None and parsed.returns.description:
        schema["description"] = " ".join(parsed.returns.description.split())
    return schema


def type_hint_schema(hint: Any, *, where: str = "type hint") -> dict[str, Any]:
    """JSON Schema for one type hint: basic types, Literal/Enum, list, dict, tuple, Union."""
    origin = get_origin(hint)
    if hint is Any:
        return {}
    if hint is None or hint is type(None):
        return {"type": "null"}
    if hint in _BASIC_TYPES:
        return {"type": _BASIC_TYPES[hint]}
    if origin in (Union, types.UnionType):
        return _union_schema(get_args(hint), where)
    if origin is Literal:
        return _literal_schema(get_args(hint), where)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return _enum_schema(hint, where)
    if hint is list or origin is list:
        return _list_schema(get_args(hint), where)
    if hint is dict or origin is dict:
        return _dict_schema(get_args(hint), where)
    if hint is tuple or origin is tuple:
        return _tuple_schema(get_args(hint), where)
    raise _unsupported(hint, where)


def _unsupported(hint: Any, where: str) -> ToolDefinitionError:
    return _hint_error(
        f"Couldn't convert the type hint {hint!r} to a JSON schema, likely because it is a custom class or object. "
        "Supported type hints are basic types like int, float, str and bool, Enum classes, typing.Literal, and "
        "list, tuple, dict and Union types containing those. If you need a more complex schema than that, you "
        "can write the JSON schema for your tool by hand and pass that instead of the function. None and Any "
        "are supported too.", where,
    )


def _hint_error(message: str, where: str) -> ToolDefinitionError:
    """transformers' wording first, then where the hint is."""
    return ToolDefinitionError(f"{message} (type hint of {where})", code="unsupported_type_hint", field=where)


def _union_schema(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    nullable = type(None) in args
    members = [type_hint_schema(a, where=where) for a in args if a is not type(None)]
    if not members:
        return {"type": "null"}
    if len(members) == 1:
        schema = members[0]
    elif all(set(m) == {"type"} and isinstance(m["type"], str) for m in members):
        schema = {"type": sorted({m["type"] for m in members})}
    else:
        schema = {"anyOf": members}
    if nullable:
        schema["nullable"] = True
    return schema


def _literal_schema(values: tuple[Any, ...], where: str) -> dict[str, Any]:
    schema = _choices_schema(values)
    if schema is None:
        raise _hint_error("Only the valid python literals can be listed in typing.Literal.", where)
    return schema


def _enum_schema(enum: type[Enum], where: str) -> dict[str, Any]:
    values = [member.value for member in enum]
    if not values:
        raise _hint_error(f"The Enum {enum.__name__} has no members, so no value could ever match it.", where)
    schema = _choices_schema(values)
    if schema is None:
        raise _hint_error(
            f"The Enum {enum.__name__} has member values that cannot be written as JSON scalars.\n"
            f"Values: {values}\nEnum member values must be int, float, str, bool or None to be converted to a JSON "
            "schema.", where,
        )
    return schema


def _choices_schema(values: Iterable[Any]) -> dict[str, Any] | None:
    """``{"type", "enum"}`` for JSON scalar choices; None when one of them is not a JSON scalar."""
    values = list(values)
    kinds: list[str] = []
    for value in values:
        kind = _scalar_kind(value)
        if kind is None:
            return None
        if kind not in kinds:
            kinds.append(kind)
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}


def _scalar_kind(value: Any) -> str | None:
    if value is None:
        return "null"
    for python_type in (bool, int, float, str):  # bool first: it is an int subclass
        if isinstance(value, python_type):
            return _BASIC_TYPES[python_type]
    return None


def _list_schema(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array"}
    if args:
        schema["items"] = type_hint_schema(args[0], where=where)
    return schema


def _dict_schema(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    if len(args) == 2:
        schema["additionalProperties"] = type_hint_schema(args[1], where=where)
    return schema


def _tuple_schema(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    if not args:
        return {"type": "array"}
    if len(args) == 1:
        raise _hint_error(
            f"The type hint {str(tuple.__class_getitem__(args)).replace('typing.', '')} is a Tuple with a single "
            "element, which we do not automatically convert to JSON schema as it is rarely necessary. If this "
            "input can contain more than one element, we recommend using a list[] type instead, or if it really "
            "is a single element, remove the tuple[] wrapper and just pass the element directly.", where,
        )
    if Ellipsis in args:
        raise _hint_error(
            "Conversion of '...' is not supported in Tuple type hints. Use list[] types for variable-length inputs "
            "instead.", where,
        )
    return {"type": "array", "prefixItems": [type_hint_schema(a, where=where) for a in args]}


class ToolSet:
    """Tools looked up by name; an unknown name is an ``UnknownToolError`` listing the known ones."""

    def __init__(self, tools: Iterable[ToolLike] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for obj in tools:
            self.add(obj)

    def add(self, obj: ToolLike) -> Tool:
        """Add one tool definition; a second tool with the same name is an error."""
        tool = as_tool(obj)
        if tool.name in self._tools:
            raise ToolDefinitionError(
                f"Duplicate tool name {tool.name!r}; every tool needs its own name.",
                code="duplicate_tool", field=tool.name,
            )
        self._tools[tool.name] = tool
        return tool

    def __getitem__(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise self._unknown(name) from None

    def _unknown(self, name: str) -> UnknownToolError:
        known = sorted(self._tools)
        listed = ", ".join(repr(n) for n in known) or "none"
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return UnknownToolError(
            f"Unknown tool {name!r}; known tools: {listed}.{hint}", field=name, got=name, known=known
        )

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def coerce(self, name: str, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """Look the tool up by name and coerce its arguments (``UnknownToolError`` if unknown)."""
        return self[name].coerce(arguments)

    def to_dicts(self) -> list[dict[str, Any]]:
        """Every tool as a ``{"type": "function", ...}`` dict, in insertion order."""
        return [tool.to_dict() for tool in self]


def tool_required_parameters(tools: Iterable[Any] | None) -> dict[str, tuple[str, ...]]:
    """Tool name → the names of its required parameters (for telling a call cut between two parameters
    from a complete one). Tools whose definition says nothing are absent."""
    out: dict[str, tuple[str, ...]] = {}
    for obj in tools or []:
        if isinstance(obj, Mapping):
            spec = obj.get("function", obj)
            name = spec.get("name") if isinstance(spec, Mapping) else None
            parameters = spec.get("parameters") if isinstance(spec, Mapping) else None
            required = parameters.get("required") if isinstance(parameters, Mapping) else None
            if isinstance(name, str) and isinstance(required, list):
                out[name] = tuple(r for r in required if isinstance(r, str))
        else:
            tool = as_tool(obj)
            out[tool.name] = tuple(r for r in tool.parameters.get("required", ()) if isinstance(r, str))
    return out


def tool_parameter_properties(tools: Iterable[Any] | None) -> dict[str, dict[str, Any]]:
    """Tool name → its parameters' ``properties``, for typing parsed tool-call arguments.

    Accepts what transformers' ``parse_response(tools=...)`` accepts (tool dicts, typed
    functions and methods) plus ``Tool`` objects and pydantic models. Like the reference,
    a dict without a usable name is skipped, and missing properties map to ``{}``.
    """
    out: dict[str, dict[str, Any]] = {}
    for index, obj in enumerate(tools or []):
        if isinstance(obj, Mapping):
            spec = obj.get("function", obj)
            name = spec.get("name") if isinstance(spec, Mapping) else None
            if not isinstance(name, str):
                continue
            parameters = spec.get("parameters")
            properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
            out[name] = dict(properties) if isinstance(properties, Mapping) else {}
        else:
            tool = _listed_tool(obj, index)
            out[tool.name] = tool.properties
    return out


def _listed_tool(obj: Any, index: int) -> Tool:
    """``as_tool`` for entry ``index`` of a tools list: an error says which entry."""
    try:
        return as_tool(obj)
    except ToolDefinitionError as exc:
        # transformers skips an entry that is neither a dict nor a function; skipping it here would leave
        # that tool's arguments untyped without a word, so it is an error (docs/compatibility.md).
        fix = " Remove the entry or pass a tool dict." if exc.code == "unsupported_tool" else ""
        raise ToolDefinitionError(f"tools[{index}]: {exc.message}{fix}", code=exc.code, field=exc.field,
                                  key=exc.key, path=f"tools[{index}]", **exc.details) from None


__all__ = [
    "Tool",
    "ToolLike",
    "ToolSet",
    "as_tool",
    "function_json_schema",
    "tool_from_dict",
    "tool_from_function",
    "tool_from_model",
    "tool_parameter_properties",
    "type_hint_schema",
]
