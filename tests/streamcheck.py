"""Reusable checks for event streams: well-formedness and chunking equivalence."""

from __future__ import annotations

import random
from typing import Any

import chatparse

SIZES = (1, 2, 3, 5, 7, 13, 31)


def check_event_stream(events: list[dict[str, Any]], message: dict[str, Any], template: Any) -> None:
    """Each open has exactly one close (or malformed), chunks only inside an open region, and close
    values are what the final message holds."""
    compiled = chatparse.load_template(template)
    open_field: str | None = None
    closed: dict[str, list[Any]] = {}
    for event in events:
        kind = event["type"]
        assert kind in ("region_open", "region_chunk", "region_close", "region_malformed"), event
        field = event["field"]
        assert field in compiled.fields, event
        if kind == "region_open":
            assert open_field is None, f"region {field!r} opened while {open_field!r} is open"
            open_field = field
        elif kind == "region_chunk":
            assert open_field == field, f"chunk for {field!r} outside its region (open: {open_field!r})"
            assert isinstance(event["text"], str) and event["text"], event
            assert event["dirty"] is (not compiled.fields[field].parser.streamable)
        else:
            assert open_field == field, f"close of {field!r} while {open_field!r} is open"
            open_field = None
            if kind == "region_close":
                # A lone reasoning close past the hold moves the content streamed before it (``moved_to``).
                closed.setdefault(event.get("moved_to", field), []).append(event["value"])
    assert open_field is None, f"region {open_field!r} never closed"
    for name, values in closed.items():
        spec = compiled.fields[name]
        if spec.join is not None:
            if compiled.ext.end:  # real-output templates: an empty block adds no separator
                values = [v for v in values if v] or values[:1]
            joined = spec.join.join(values)
            if spec.ext.strip_joined:
                joined = joined.strip()
            assert message.get(name, "") == joined or (not joined and name not in message)
        elif spec.repeats and spec.ext.extend:
            flat = [item for value in values for item in (value if isinstance(value, list) else [value])]
            assert message.get(name, []) == flat
        elif spec.repeats:
            assert message.get(name, []) == values
        else:
            # In lists: a float region may hold NaN, which equals itself only by identity.
            assert [message.get(name)] == values[-1:] or (name not in message and values[-1] in (None, "", [], {}))


def split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def random_split(text: str, rng: random.Random) -> list[str]:
    if len(text) < 2:
        return [text]
    cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, min(len(text) - 1, 24))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def stream(template: Any, prefix: str, chunks: list[str], finish_reason: str | None = None,
           **options: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    parser = chatparse.ResponseParser(template, prefix, **options)
    events = list(parser.initial_events)
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    message, final = parser.finalize(finish_reason=finish_reason)
    return message, events + final


def chunk_text(events: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for event in events:
        if event["type"] == "region_chunk":
            out[event["field"]] = out.get(event["field"], "") + event["text"]
    return out


def assert_chunking_equivalent(template: Any, prefix: str, text: str, *, seed: int = 0, **options: Any) -> dict[str, Any]:
    """Whole, per-size and random splits all give the one-shot message and the same chunk text."""
    expected = chatparse.parse_response(text, template, prefix=prefix, **options)
    whole_message, whole_events = stream(template, prefix, [text], **options)
    assert whole_message == expected
    check_event_stream(whole_events, whole_message, template)
    reference_text = chunk_text(whole_events)
    rng = random.Random(seed)
    plans = [split(text, n) for n in SIZES] + [random_split(text, rng) for _ in range(4)]
    for chunks in plans:
        message, events = stream(template, prefix, chunks, **options)
        assert message == expected, f"chunking {[len(c) for c in chunks][:12]} changed the message"
        assert chunk_text(events) == reference_text
        check_event_stream(events, message, template)
    return expected
