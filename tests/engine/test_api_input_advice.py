"""``parse_response`` given something other than text names what it found and the call that takes it."""

from __future__ import annotations

import pytest

from chatparse import UsageError, parse_response


@pytest.mark.parametrize(
    ("value", "advice"),
    [
        (b"<think>x</think>", "data.decode('utf-8')"),
        (bytearray(b"x"), "ResponseParser(...).feed_bytes()"),
        ([151644, 77091, 198], "chatparse.integrations.transformers.parse_response(ids, tokenizer=tokenizer"),
        ((1, 2), "tokenizer.decode(ids, skip_special_tokens=False)"),
        (None, "found NoneType"),
    ],
    ids=["bytes", "bytearray", "token-ids", "token-id-tuple", "none"],
)
def test_non_text_gets_advice_that_fits_parse_response(value: object, advice: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_response(value, "qwen3", prefix="")  # type: ignore[call-overload]
    assert caught.value.code == "bad_input_type"
    message = str(caught.value)
    assert message.startswith("parse_response takes the generated text as str")
    assert advice in message
    assert "use feed_bytes() for bytes" not in message  # parse_response has no feed_bytes()


def test_a_batch_of_texts_is_still_a_batch() -> None:
    assert [m["content"] for m in parse_response(["a", "b"], "qwen3", prefix="")] == ["a", "b"]
