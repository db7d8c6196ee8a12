"""benchmarks/detect_real_templates.py on the real chat templates this repository keeps: every template is
classed as the detection tests expect (the no-fit ones as none), and none is detected-but-wrong."""

from __future__ import annotations

import pytest

from tests.templates.test_real_chat_templates import CASES, CHAT_TEMPLATES


def test_the_kept_templates_are_classed_as_the_detection_tests_expect() -> None:
    pytest.importorskip("transformers")
    from benchmarks.detect_real_templates import _known_kwargs, measure

    known = _known_kwargs()
    rows = {row["template"].removesuffix(".jinja"): row for row in
            (measure(path, known) for path in sorted(CHAT_TEMPLATES.glob("*.jinja")))}
    assert {stem: row["detected"] for stem, row in rows.items()} == {stem: case[0] for stem, case in CASES.items()}
    assert {stem for stem, row in rows.items() if row["class"] == "none"} == {
        stem for stem, case in CASES.items() if case[0] is None}
    assert [stem for stem, row in rows.items() if row["class"] == "wrong"] == []
    # the templates that render tool calls: their calls round-trip
    with_calls = [row for row in rows.values() if row["class"] != "none"
                  and not row["turns"]["one_call"].startswith("not rendered")]
    assert len(with_calls) >= 8 and all(row["turns"]["one_call"].startswith("ok") for row in with_calls)
