"""chatparse: turn raw language-model output into structured, typed, verified data."""

from chatparse.errors import (
    ChatparseError,
    ContentParseError,
    MissingFieldError,
    OutputError,
    PrefixRequiredError,
    TemplateError,
    TransformError,
    UsageError,
)

__version__ = "0.1.0"

__all__ = [
    "ChatparseError",
    "ContentParseError",
    "MissingFieldError",
    "OutputError",
    "PrefixRequiredError",
    "TemplateError",
    "TransformError",
    "UsageError",
    "__version__",
]
