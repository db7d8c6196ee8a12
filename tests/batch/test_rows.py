"""A row's rules: the text and the prompt by key, the prompt never assumed, tools per row or for all."""

from __future__ import annotations

import json

import pytest

from chatparse.batch import RowOptions, RowParser
from chatparse.errors import UsageError

PREFIX = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
CALL = '<tool_call>{"name": "get_weather", "arguments": {"days": "3"}}</tool_call><|im_end|>'
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"days": {"type": "integer"}}}}}]


def test_a_row_parses_by_its_keys() -> None:
    rows = RowParser("qwen3", RowOptions(output_field="response", prefix_field="prompt"))
    outcome = rows.parse_row({"response": "<think>hm</think>Hi<|im_end|>", "prompt": PREFIX, "id": 7})
    assert outcome.ok and outcome.message == {"role": "assistant", "thinking": "hm", "content": "Hi"}


@pytest.mark.parametrize(
    ("row", "code", "key"),
    [
        ({"prefix": PREFIX}, "missing_output", "output"),
        ({"output": 5, "prefix": PREFIX}, "bad_output", "output"),
        ({"output": "x"}, "prefix_required", "prefix"),
        ({"output": "x", "prefix": None}, "prefix_required", "prefix"),
        ({"output": "x", "prefix": [{"role": "user", "content": "hi"}]}, "bad_prefix", "prefix"),
        ({"output": "x", "prefix": "", "tools": "{not json"}, "bad_tools", "tools"),
        ({"output": "x", "prefix": "", "tools": 5}, "bad_tools", "tools"),
        ({"output": "x", "prefix": "", "finish_reason": 1}, "bad_finish_reason", "finish_reason"),
    ],
    ids=["no-output", "output-not-text", "no-prefix", "null-prefix", "chat-messages-prefix", "tools-not-json",
         "tools-not-list", "finish-reason-not-text"],
)
def test_a_bad_row_is_an_error_with_its_code_and_key(row: dict[str, object], code: str, key: str) -> None:
    outcome = RowParser("qwen3").parse_row(row)
    assert outcome.message is None and outcome.error is not None
    assert (outcome.error["code"], outcome.error["key"]) == (code, key)


# A Qwen 3.5 call that stops after its first parameter's close: the model dropped '</function>' (stop), or
# the token limit cut it before the next parameter (length).
CUT_CALL = "<tool_call>\n<function=run>\n<parameter=command>\nls\n</parameter>\n"


def test_a_rows_finish_reason_reaches_the_parser() -> None:
    rows = RowParser("qwen3.5", RowOptions(prefix=""))
    stopped = rows.parse_row({"output": CUT_CALL, "finish_reason": "stop"})
    assert stopped.message is not None and [c["function"]["name"] for c in stopped.message["tool_calls"]] == ["run"]
    cut = rows.parse_row({"output": CUT_CALL, "finish_reason": "length"})
    assert cut.message is not None and "tool_calls" not in cut.message
    assert [m["code"] for m in cut.message["malformed"]] == ["truncated"]
    named = RowParser("qwen3.5", RowOptions(prefix="", finish_reason_field="stop_reason"))
    assert named.parse_row({"output": CUT_CALL, "stop_reason": "length"}).message == cut.message
    # One vocabulary, any case: Anthropic's and Gemini's spellings of the token limit are the same cut.
    for reason in ("max_tokens", "MAX_TOKENS", "max_output_tokens"):
        assert rows.parse_row({"output": CUT_CALL, "finish_reason": reason}).message == cut.message
    unknown = rows.parse_row({"output": CUT_CALL, "finish_reason": "banana"})
    assert unknown.message is None and unknown.error is not None
    assert unknown.error["code"] == "unknown_finish_reason" and "'banana'" in unknown.error["message"]


def test_the_prefix_option_stands_in_only_for_a_missing_prefix() -> None:
    rows = RowParser("qwen3", RowOptions(prefix=""))
    assert rows.parse_row({"output": "Hi<|im_end|>"}).message == {"role": "assistant", "content": "Hi"}
    assert rows.parse_row({"output": "Hi", "prefix": 3}).error["code"] == "bad_prefix"  # type: ignore[index]
    opened = RowParser("qwen3", RowOptions(prefix=PREFIX + "<think>"))
    assert opened.parse_row({"output": "a</think>b"}).message == {"role": "assistant", "thinking": "a", "content": "b"}


def test_tools_type_arguments_from_the_row_or_for_all_rows() -> None:
    plain = RowParser("qwen3").parse_row({"output": CALL, "prefix": PREFIX}).message
    assert plain["tool_calls"][0]["function"]["arguments"] == {"days": "3"}  # type: ignore[index]
    for rows, row in (
        (RowParser("qwen3", RowOptions(tools=TOOLS)), {"output": CALL, "prefix": PREFIX}),
        (RowParser("qwen3"), {"output": CALL, "prefix": PREFIX, "tools": TOOLS}),
        (RowParser("qwen3"), {"output": CALL, "prefix": PREFIX, "tools": json.dumps(TOOLS)}),
    ):
        message = rows.parse_row(row).message
        assert message is not None and message["tool_calls"][0]["function"]["arguments"] == {"days": 3}


def test_a_parse_failure_is_the_rows_error_with_location() -> None:
    outcome = RowParser("qwen3", RowOptions(on_malformed="raise")).parse_row(
        {"output": "<tool_call>{nope</tool_call>", "prefix": PREFIX})
    assert outcome.error is not None and outcome.error["field"] == "tool_calls"
    assert outcome.error["code"] == "content_parse_failed"


def test_options_are_checked_when_made() -> None:
    with pytest.raises(UsageError):
        RowOptions(prefix=3)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        RowOptions(tools="[]")  # type: ignore[arg-type]


def test_limits_reach_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    from chatparse import Limits
    from chatparse.batch import rows as rows_module

    seen: list[object] = []
    real = rows_module.ResponseParser

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(kwargs["limits"])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(rows_module, "ResponseParser", spy)
    limits = Limits(max_holdback=8)
    assert RowParser("qwen3", RowOptions(prefix="", limits=limits)).parse_row({"output": "Hi<|im_end|>"}).ok
    assert seen == [limits]
