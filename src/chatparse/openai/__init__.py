"""OpenAI Chat Completions output from a parse: final messages, ``chat.completion`` objects, and
streamed ``chat.completion.chunk`` deltas driven by a ``ResponseParser`` (see docs/openai.md).

``message``: the message shape and ``finish_reason``; ``ids``: tool-call ids; ``stream``: the chunk stream
(its text and tool-call routing in ``text`` and ``calls``, its state in ``state``).
"""

from chatparse.openai.calls import _streamed_json as _streamed_json
from chatparse.openai.ids import IdFactory, default_call_id
from chatparse.openai.message import (
    CONTENT_FIELD,
    REASONING_FIELDS,
    TOOLS_FIELD,
    Chunk,
    arguments_json,
    finish_reason,
    to_chat_completion,
    to_chat_message,
)
from chatparse.openai.message import _encode as _encode
from chatparse.openai.state import _CallState as _CallState
from chatparse.openai.stream import ChatCompletionStream

# _CallState, _streamed_json and _encode: internal, kept at this path for the tests that reach them.
__all__ = ["CONTENT_FIELD", "REASONING_FIELDS", "TOOLS_FIELD", "ChatCompletionStream", "Chunk", "IdFactory",
           "arguments_json", "default_call_id", "finish_reason", "to_chat_completion", "to_chat_message"]
