"""Errors of template synthesis: the chat template cannot be rendered or read, or a part of the format
cannot be inferred from what it renders. Each has a stable ``code`` and names the probe at fault."""

from __future__ import annotations

from chatparse.errors import ChatparseError


class SynthesisError(ChatparseError, ValueError):
    """The chat template could not be turned into a response template (``code`` says why; ``probe`` names
    the render that showed it, when one did)."""

    code = "synthesis_failed"

    @property
    def probe(self) -> str | None:
        value = self.details.get("probe")
        return value if isinstance(value, str) else None


class MissingDependencyError(SynthesisError, ImportError):
    """jinja2 or transformers (the chat-template renderer) is not installed."""

    code = "missing_dependency"


class RenderError(SynthesisError):
    """The chat template failed to render, looped past the time budget or rendered too much text."""

    code = "render_failed"


class NotInferableError(SynthesisError):
    """The renders do not show a part of the format (``code``: ``calls_not_rendered``, ``content_not_rendered``,
    ``no_assistant_header``, ``unknown_call_syntax``, ...)."""

    code = "not_inferable"
