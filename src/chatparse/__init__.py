"""chatparse: turn raw language-model output into structured, typed, verified data."""

from chatparse.engine import ResponseParser, parse_response
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
from chatparse.finish import UnknownFinishReasonError
from chatparse.lazy import load as _load
from chatparse.limits import Limits
from chatparse.openai import ChatCompletionStream, to_chat_completion, to_chat_message
from chatparse.template import CompiledTemplate, load_template
from chatparse.templates import detect_template, get_template, list_templates

__version__ = "0.1.0"

# The tool-call boundary and grounded answers load pydantic; import them on first use so that
# `import chatparse` stays light for a serving engine that only parses. What a stream needs (the engine,
# OpenAI chunks, the built-in templates) is imported here; the rest through ``load``, which is safe when
# many threads make the first use at once.
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
    "ArgumentStreamResult": "chatparse.tools",
    "XMLArgumentStream": "chatparse.tools",
    "synthesize_template": "chatparse.synthesize",
    "tool_grammar": "chatparse.grammar",
    "ToolGrammar": "chatparse.grammar",
    "GrammarError": "chatparse.grammar",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'chatparse' has no attribute {name!r}")
    return getattr(_load(module), name)


__all__ = [
    *_LAZY,
    "ChatCompletionStream",
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
    "UnknownFinishReasonError",
    "UsageError",
    "__version__",
    "detect_template",
    "get_template",
    "list_templates",
    "load_template",
    "parse_response",
    "to_chat_completion",
    "to_chat_message",
]
