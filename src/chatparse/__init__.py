"""chatparse: turn raw language-model output into structured, typed, verified data."""

from chatparse.engine import ResponseParser, parse_response
from chatparse.engine.limits import Limits
from chatparse.errors import (
    ChatparseError,
    ContentParseError,
    MissingFieldError,
    OutputError,
    PrefixRequiredError,
    RegexBudgetError,
    TemplateError,
    TemplateWarning,
    TransformError,
    UsageError,
)
from chatparse.template import CompiledTemplate, load_template

__version__ = "0.1.0"

# The tool-call boundary and grounded answers load pydantic; import them on first use so that
# `import chatparse` stays light for a serving engine that only parses.
_LAZY = {
    "ArgumentStream": "chatparse.tools",
    "ToolArgumentError": "chatparse.tools",
    "ToolInputBase": "chatparse.tools",
    "StrictModel": "chatparse.tools",
    "ToolSet": "chatparse.tools",
    "coerce_arguments": "chatparse.tools",
    "parse_near_json": "chatparse.tools",
    "GroundedAnswer": "chatparse.answers",
    "AnswerCheck": "chatparse.answers",
    "AnswerResult": "chatparse.answers",
    "AnswerStream": "chatparse.answers",
    "check_answer": "chatparse.answers",
    "answer_question": "chatparse.answers",
    "generation_schema": "chatparse.answers",
    "StrictJSONError": "chatparse.strict_json",
    "ChatCompletionStream": "chatparse.openai",
    "to_chat_message": "chatparse.openai",
    "to_chat_completion": "chatparse.openai",
    "ArgumentStreamResult": "chatparse.tools",
    "XMLArgumentStream": "chatparse.tools",
    "list_templates": "chatparse.templates",
    "get_template": "chatparse.templates",
    "detect_template": "chatparse.templates",
    "synthesize_template": "chatparse.synthesize",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'chatparse' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

__all__ = [
    *_LAZY,
    "ChatparseError",
    "CompiledTemplate",
    "Limits",
    "ContentParseError",
    "MissingFieldError",
    "OutputError",
    "PrefixRequiredError",
    "RegexBudgetError",
    "ResponseParser",
    "TemplateError",
    "TemplateWarning",
    "TransformError",
    "UsageError",
    "__version__",
    "load_template",
    "parse_response",
]
