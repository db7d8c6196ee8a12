"""Tool-call ids: the factory type a stream takes and the default (OpenAI's ``call_`` + 24 characters)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

IdFactory = Callable[[int], str]


def default_call_id(index: int) -> str:
    """A random OpenAI-style call id (``call_`` + 24 hex characters); ``index`` is unused."""
    del index
    return "call_" + uuid.uuid4().hex[:24]
