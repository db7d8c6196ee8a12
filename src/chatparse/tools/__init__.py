"""The tool-call boundary: tool schemas, representation coercion, near-JSON, streamed arguments.

Lenient about how the model wrote a value, never about which value it chose; strict inside.
"""

from chatparse.tools.base import StrictModel, ToolInputBase, validation_to_tool_error
from chatparse.tools.coerce import Coercion, coerce_arguments, coerce_value, find_argument_issues
from chatparse.tools.errors import (
    ArgumentStreamError,
    NearJSONError,
    StrictModelError,
    ToolArgumentError,
    ToolDefinitionError,
    UnknownToolError,
)
from chatparse.tools.near_json import parse_near_json
from chatparse.tools.schema import (
    Tool,
    ToolSet,
    as_tool,
    function_json_schema,
    tool_from_dict,
    tool_from_function,
    tool_from_model,
    tool_parameter_properties,
)
from chatparse.tools.stream import ArgumentStream, ArgumentStreamResult
from chatparse.tools.xml_stream import XMLArgumentStream

__all__ = [
    "ArgumentStream",
    "ArgumentStreamError",
    "ArgumentStreamResult",
    "Coercion",
    "NearJSONError",
    "StrictModel",
    "StrictModelError",
    "Tool",
    "ToolArgumentError",
    "ToolDefinitionError",
    "ToolInputBase",
    "ToolSet",
    "UnknownToolError",
    "XMLArgumentStream",
    "as_tool",
    "coerce_arguments",
    "coerce_value",
    "find_argument_issues",
    "function_json_schema",
    "parse_near_json",
    "tool_from_dict",
    "tool_from_function",
    "tool_from_model",
    "tool_parameter_properties",
    "validation_to_tool_error",
]
