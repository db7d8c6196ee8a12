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
from chatparse.template import CompiledTemplate, load_template

__version__ = "0.1.0"

__all__ = [
    "ChatparseError",
    "CompiledTemplate",
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
