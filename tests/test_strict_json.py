"""strict_json.loads: RFC 8259 acceptance (y_), rejection with a stable code (n_), and properties."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatparse.errors import ChatparseError, InputTypeError
from chatparse.strict_json import StrictJSONError, loads

# y_: must parse, to exactly this value (names follow JSONTestSuite's categories; cases are ours).
ACCEPT: list[tuple[str, str, Any]] = [
    ("y_object_empty", "{}", {}),
    ("y_object_simple", '{"a":1}', {"a": 1}),
    ("y_object_nested", '{"a":{"b":{"c":[]}}}', {"a": {"b": {"c": []}}}),
    ("y_object_ws_everywhere", ' \t\n{ "a" : [ 1 , 2 ] , "b" : { } } \r\n', {"a": [1, 2], "b": {}}),
    ("y_object_empty_key", '{"":0}', {"": 0}),
    ("y_object_same_key_different_case", '{"a":1,"A":2}', {"a": 1, "A": 2}),
    ("y_object_same_key_in_sibling_objects", '[{"a":1},{"a":2}]', [{"a": 1}, {"a": 2}]),
    ("y_object_same_key_nested", '{"a":{"a":{"a":1}}}', {"a": {"a": {"a": 1}}}),
    ("y_object_key_escaped", '{"\\u00e9":1}', {"é": 1}),
    ("y_array_empty", "[]", []),
    ("y_array_empty_ws", "[ \n ]", []),
    ("y_array_mixed", '[1,"a",null,true,false,{},[]]', [1, "a", None, True, False, {}, []]),
    ("y_array_nested_mixed", '[[{"x":[[]]}]]', [[{"x": [[]]}]]),
    ("y_number_zero", "0", 0),
    ("y_number_negative_zero", "-0", 0),
    ("y_number_negative_zero_float", "-0.0", -0.0),
    ("y_number_int", "123", 123),
    ("y_number_negative_int", "-7", -7),
    ("y_number_fraction", "0.5", 0.5),
    ("y_number_exponent", "1e3", 1000.0),
    ("y_number_exponent_upper_plus", "1E+2", 100.0),
    ("y_number_exponent_minus", "2e-1", 0.2),
    ("y_number_fraction_exponent", "-1.25e2", -125.0),
    ("y_number_underflow_to_zero", "1e-400", 0.0),
    ("y_number_big_int_in_double_range", str(2**64), 2**64),
    ("y_number_max_double", "1.7976931348623157e308", 1.7976931348623157e308),
    ("y_string_empty", '""', ""),
    ("y_string_simple_escapes", '"\\"\\\\\\/\\b\\f\\n\\r\\t"', '"\\/\b\f\n\r\t'),
    ("y_string_unicode_escape", '"\\u0041\\u00e9"', "Aé"),
    ("y_string_surrogate_pair", '"\\ud83d\\ude00"', "😀"),
    ("y_string_surrogate_pair_upper_hex", '"\\uD834\\uDD1E"', "𝄞"),
    ("y_string_raw_astral", '"😀"', "😀"),
    ("y_string_korean", '"교육비 한도는 분기당 30만 원이다"', "교육비 한도는 분기당 30만 원이다"),
    ("y_string_del_and_c1_allowed", '"\x7f\x85"', "\x7f\x85"),
    ("y_string_escaped_nul", '"\\u0000"', "\x00"),
    ("y_string_line_separator", '"\u2028\u2029"', "\u2028\u2029"),
    ("y_literal_true", "true", True),
    ("y_literal_false", "false", False),
    ("y_literal_null", "null", None),
    ("y_toplevel_string_ws", '  "x"  ', "x"),
    ("y_depth_exactly_64", "[" * 64 + "]" * 64, json.loads("[" * 64 + "]" * 64)),
]

# n_: must be rejected with exactly this code.
REJECT: list[tuple[str, str | bytes, str]] = [
    ("n_empty", "", "empty_input"),
    ("n_only_ws", " \n\t ", "empty_input"),
    ("n_object_duplicate_key", '{"a":1,"a":2}', "duplicate_key"),
    ("n_object_duplicate_key_escaped", '{"a":1,"\\u0061":2}', "duplicate_key"),
    ("n_object_duplicate_key_nested", '{"x":{"status":"a","status":"b"}}', "duplicate_key"),
    ("n_object_duplicate_key_same_value", '{"a":1,"a":1}', "duplicate_key"),
    ("n_object_trailing_comma", '{"a":1,}', "unexpected_character"),
    ("n_object_unquoted_key", "{a:1}", "unexpected_character"),
    ("n_object_single_quoted_key", "{'a':1}", "unexpected_character"),
    ("n_object_missing_colon", '{"a" 1}', "unexpected_character"),
    ("n_object_missing_comma", '{"a":1 "b":2}', "unexpected_character"),
    ("n_object_non_string_key", "{1:1}", "unexpected_character"),
    ("n_object_unclosed", '{"a":1', "unexpected_end"),
    ("n_object_comment", '{"a":1 /* c */}', "unexpected_character"),
    ("n_array_trailing_comma", "[1,]", "unexpected_character"),
    ("n_array_leading_comma", "[,1]", "unexpected_character"),
    ("n_array_missing_comma", "[1 2]", "unexpected_character"),
    ("n_array_unclosed", "[1,2", "unexpected_end"),
    ("n_array_mismatched_close", "[1}", "unexpected_character"),
    ("n_number_nan", "NaN", "non_finite_number"),
    ("n_number_infinity", "Infinity", "non_finite_number"),
    ("n_number_minus_infinity", "-Infinity", "non_finite_number"),
    ("n_number_nan_in_object", '{"a":NaN}', "non_finite_number"),
    ("n_number_overflow_exponent", "1e400", "number_out_of_range"),
    ("n_number_overflow_negative", "-1.5e999", "number_out_of_range"),
    ("n_number_overflow_int", "1" + "0" * 309, "number_out_of_range"),
    ("n_number_huge_int_5001_digits", "9" * 5001, "number_out_of_range"),
    ("n_number_leading_zero", "01", "invalid_number"),
    ("n_number_trailing_dot", "[1.]", "invalid_number"),
    ("n_number_cut_after_dot", "1.", "unexpected_end"),
    ("n_number_leading_dot", ".5", "unexpected_character"),
    ("n_number_plus_sign", "+1", "unexpected_character"),
    ("n_number_bare_minus", "[-]", "invalid_number"),
    ("n_number_cut_after_minus", '{"a": -', "unexpected_end"),
    ("n_number_exponent_without_digits", "1e ", "invalid_number"),
    ("n_number_cut_in_exponent", "[1.5e+", "unexpected_end"),
    ("n_number_cut_prefix_is_still_invalid", "[01", "invalid_number"),
    ("n_number_hex", "0x10", "trailing_text"),
    ("n_number_double_minus", "--1", "invalid_number"),
    ("n_string_unclosed", '"abc', "unexpected_end"),
    ("n_string_single_quotes", "'abc'", "unexpected_character"),
    ("n_string_raw_newline", '"a\nb"', "invalid_string"),
    ("n_string_raw_tab", '"a\tb"', "invalid_string"),
    ("n_string_raw_nul", '"a\x00b"', "invalid_string"),
    ("n_string_bad_escape", '"\\x41"', "invalid_escape"),
    ("n_string_escaped_apostrophe", '"\\\'"', "invalid_escape"),
    ("n_string_short_unicode_escape", '"\\u12G4"', "invalid_escape"),
    ("n_string_truncated_unicode_escape", '"\\u12', "unexpected_end"),
    ("n_string_lone_high_surrogate_escape", '"\\ud800"', "invalid_unicode"),
    ("n_string_lone_low_surrogate_escape", '"\\udc00"', "invalid_unicode"),
    ("n_string_high_then_non_low", '"\\ud800\\u0041"', "invalid_unicode"),
    ("n_string_two_high_surrogates", '"\\ud800\\ud800"', "invalid_unicode"),
    ("n_string_raw_lone_surrogate", '"\ud800"', "invalid_unicode"),
    ("n_string_raw_surrogate_pair_in_str", '"\ud83d\ude00"', "invalid_unicode"),
    ("n_literal_truncated_true", "tru", "unexpected_end"),
    ("n_literal_capitalised", "True", "unexpected_character"),
    ("n_literal_python_none", "None", "unexpected_character"),
    ("n_literal_trailing_letters", "truex", "trailing_text"),
    ("n_structure_two_values", "{} {}", "trailing_text"),
    ("n_structure_trailing_prose", '{"a":1} thanks!', "trailing_text"),
    ("n_structure_code_fence", '```json\n{"a":1}\n```', "unexpected_character"),
    ("n_structure_nbsp_whitespace", '\u00a0{"a":1}', "unexpected_character"),
    ("n_structure_form_feed_whitespace", '\f{"a":1}', "unexpected_character"),
    ("n_structure_bom_str", '\ufeff{"a":1}', "bom"),
    ("n_structure_bom_bytes", b'\xef\xbb\xbf{"a":1}', "bom"),
    ("n_structure_too_deep", "[" * 65 + "]" * 65, "too_deep"),
    ("n_structure_too_deep_objects", '{"a":' * 65 + "1" + "}" * 65, "too_deep"),
    ("n_structure_100000_open_arrays", "[" * 100_000, "too_deep"),
    ("n_encoding_invalid_utf8", b'{"a":"\xff"}', "invalid_utf8"),
    ("n_encoding_overlong", b'"\xc0\xaf"', "invalid_utf8"),
    ("n_encoding_cut_inside_a_character", b'"\xea\xb0', "unexpected_end"),
    ("n_encoding_incomplete_character_mid_input", b'"\xea\xb0"', "invalid_utf8"),
    ("n_encoding_utf16", '{"a":1}'.encode("utf-16-le"), "unexpected_character"),
    ("n_encoding_encoded_surrogate", b'"\xed\xa0\x80"', "invalid_utf8"),
]


@pytest.mark.parametrize(("name", "text", "expected"), ACCEPT, ids=[case[0] for case in ACCEPT])
def test_accepts(name: str, text: str, expected: Any) -> None:
    value = loads(text)
    assert value == expected
    assert type(value) is type(expected)
    assert loads(text.encode("utf-8", "surrogatepass")) == expected


@pytest.mark.parametrize(("name", "raw", "code"), REJECT, ids=[case[0] for case in REJECT])
def test_rejects_with_code(name: str, raw: str | bytes, code: str) -> None:
    with pytest.raises(StrictJSONError) as info:
        loads(raw)
    assert info.value.code == code
    assert isinstance(info.value, ChatparseError)
    assert isinstance(info.value, ValueError)


def test_case_counts_cover_the_suite() -> None:
    assert len(ACCEPT) + len(REJECT) >= 80


def test_negative_zero_float_keeps_its_sign() -> None:
    assert math.copysign(1.0, loads("-0.0")) == -1.0


def test_max_bytes_is_measured_on_utf8_bytes() -> None:
    text = '"' + "가" * 10 + '"'  # 32 bytes, 12 chars
    assert loads(text, max_bytes=32) == "가" * 10
    for raw in (text, text.encode()):
        with pytest.raises(StrictJSONError) as info:
            loads(raw, max_bytes=31)
        assert info.value.code == "too_large"


def test_max_depth_is_configurable_and_can_be_disabled() -> None:
    assert loads("[[1]]", max_depth=2) == [[1]]
    with pytest.raises(StrictJSONError) as info:
        loads("[[1]]", max_depth=1)
    assert info.value.code == "too_deep"
    deep = "[" * 5000 + "]" * 5000
    value = loads(deep, max_depth=None)
    depth = 0
    while value:
        value = value[0]
        depth += 1
    assert depth == 4999


def test_offsets_are_character_offsets() -> None:
    with pytest.raises(StrictJSONError) as info:
        loads('{"가나":1,"가나":2}')
    assert info.value.offset == 8
    assert info.value.key == "가나"
    with pytest.raises(StrictJSONError) as info:
        loads('["가가", x]'.encode())
    assert info.value.offset == 7


def test_invalid_utf8_offset_counts_decoded_characters() -> None:
    with pytest.raises(StrictJSONError) as info:
        loads('"가나'.encode() + b"\xff" + b'"')
    assert info.value.code == "invalid_utf8"
    assert info.value.offset == 3


def test_message_grammar_expected_found_where() -> None:
    with pytest.raises(StrictJSONError) as info:
        loads('{"a":1,"a":2}')
    assert str(info.value) == (
        "expected each key once per object, found the key 'a' again at offset 7. Send one value per key."
    )
    with pytest.raises(StrictJSONError) as info:
        loads("[1 2]")
    assert str(info.value) == "expected ',' or ']' after an array element, found '2' at offset 3."
    with pytest.raises(StrictJSONError) as info:
        loads('"a\nb"')
    assert str(info.value).startswith(
        "expected a printable character or an escape inside a string, found character U+000A at offset 2."
    )


def test_long_duplicate_key_is_excerpted_in_the_message() -> None:
    key = "k" * 500
    with pytest.raises(StrictJSONError) as info:
        loads(json.dumps({key: 1})[:-1] + f',"{key}":2}}')
    assert len(str(info.value)) < 200
    assert info.value.key == key


# Property tests ---------------------------------------------------------------------------------

_json_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _json_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_json_text, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_json_values)
def test_round_trips_what_the_stdlib_writes(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=2)):
        assert loads(text) == value
        assert loads(text.encode("utf-8")) == value


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('{}[]":,0123456789.eE+-tfnrulas\\ \n\ud800x')), max_size=30))
def test_only_strict_json_errors_escape_and_agree_with_stdlib(text: str) -> None:
    try:
        value = loads(text)
    except StrictJSONError:
        return
    # Whatever strict accepts, the stdlib accepts with the same value (the converse is not true).
    assert json.loads(text) == value


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_arbitrary_bytes_raise_only_strict_json_errors(raw: bytes) -> None:
    try:
        loads(raw)
    except StrictJSONError as exc:
        assert exc.code


# --- input types (issue 13) --------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [bytearray(b'{"a": [1]}'), memoryview(b'{"a": [1]}')])
def test_bytearray_and_memoryview_are_read_as_bytes(raw: bytearray | memoryview) -> None:
    assert loads(raw) == {"a": [1]}


def test_bytes_likes_keep_the_bytes_rules() -> None:
    with pytest.raises(StrictJSONError) as caught:
        loads(bytearray(b'{"a": "\xff"}'))
    assert caught.value.code == "invalid_utf8"
    with pytest.raises(StrictJSONError) as caught:
        loads(memoryview(b"[1, 2]"), max_bytes=3)
    assert caught.value.code == "too_large"


@pytest.mark.parametrize("raw", [None, 5, 1.5, ["{}"], {"a": 1}, object()])
def test_other_types_are_a_named_type_error(raw: Any) -> None:
    """They used to escape as AttributeError ('NoneType' object has no attribute 'encode')."""
    with pytest.raises(InputTypeError) as caught:
        loads(raw)
    assert caught.value.code == "bad_input_type" and isinstance(caught.value, TypeError)
    assert f"found {type(raw).__name__}" in str(caught.value)


# --- the C-scanner fast path (issue 17): the exact reader's verdict on every input ----------------------

from chatparse.strict_json import _decode, _Parser, scan_strict  # noqa: E402


def _exact(raw: str | bytes, **limits: Any) -> tuple[str, Any]:
    """The hand-written reader's verdict alone: ('ok', value) or (code, offset, message)."""
    try:
        return "ok", _Parser(_decode(raw, limits.get("max_bytes")), limits.get("max_depth", 64)).parse_document()
    except StrictJSONError as exc:
        return exc.code, (exc.offset, exc.message)


def _verdict(raw: str | bytes, **limits: Any) -> tuple[str, Any]:
    try:
        return "ok", loads(raw, **limits)
    except StrictJSONError as exc:
        return exc.code, (exc.offset, exc.message)


FAST_PATH_EDGES = [
    '{"a": 1e400}', '[1e308, 2e308]', "1" + "0" * 308, "2" + "0" * 308, "-" + "9" * 309, "1" + "0" * 300 + "e50",
    "1" + "0" * 220 + ".5e90", "[1e-400, 0e000, 5E+0300]", '"\\ud83d\\ude00"', '"\\ud83d"', '"\\\\ud83d"',
    '["\\ud800\\u0041"]', '{"\\udc00": 1}', '"\\\\\\ud800"', "[" * 64 + "]" * 64, "[" * 65 + "]" * 65,
    '[{"a": [' * 21 + "]}]" * 21, '[{"a": [' * 22 + "]}]" * 22, '["[[[[", "{{{{"]' + " " * 3, "[" * 3000 + "]" * 3000,
    '{"a": NaN}', "[Infinity]", '{"a": 1, "a": 1}', '{"a": {"b": 1, "b": 2}}', '"x"\t\n', "\ufeff[]", '"\ud800"',
    '"\ud83d\ude00"', "[1.0, -0.0, 0]", '{"k": "e000 0e000 \\u00e9"}',
    # numbers inside dicts that hold only atomic values, and below the top level
    '[{"a": 1e400}]', '[[{"b": [-1e999]}]]', '{"a": {"b": -' + "9" * 320 + "}}", '[{"a": 1.5, "b": 9e307}]',
    # the byte cap where the char count alone cannot decide it (40 bytes: 19 or 20 chars of 2 bytes each)
    '"' + "é" * 19 + '"', '"' + "é" * 19 + 'x"', '"' + "é" * 20 + '"', '["é\\ud800"]', '["é", "\\udfff"]',
    '"é\ud800"', '{"é": "\ud800"}', '{"\ud800": 1}', '["\ud800' + "é" * 30 + '"]',
]


@pytest.mark.parametrize("text", FAST_PATH_EDGES)
def test_fast_path_gives_the_exact_readers_verdict(text: str) -> None:
    for raw in (text, text.encode("utf-8", "surrogatepass")):
        for limits in ({}, {"max_depth": 3}, {"max_depth": None}, {"max_bytes": 40}):
            if limits.get("max_depth", 0) is None and text.startswith("[" * 3000):
                continue  # the exact reader walks it iteratively; nothing to compare against the C scanner
            expected, got = _exact(raw, **limits), _verdict(raw, **limits)
            assert got == expected
            if expected[0] == "ok":
                assert repr(got[1]) == repr(expected[1])  # -0.0 and int/float kinds included


_FUZZ_ALPHABET = [*'{}[]":,0123456789.eE+-tfnrulasNIy \n\\', "\\u", "\\ud83d", "\\ude00", "e400", "\ud800"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_FUZZ_ALPHABET), max_size=40).map("".join))
def test_fast_path_agrees_with_the_exact_reader_on_fuzz(text: str) -> None:
    assert _verdict(text) == _exact(text)
    assert _verdict(text, max_depth=2) == _exact(text, max_depth=2)


@settings(max_examples=150, deadline=None)
@given(_json_values, st.sampled_from([None, 0, 2]))
def test_fast_path_agrees_on_valid_documents(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=indent == 2)
    assert repr(_verdict(text)) == repr(_exact(text))
    assert repr(_verdict(text, max_depth=1)) == repr(_exact(text, max_depth=1))


def test_scan_strict_vouches_only_for_what_loads_accepts() -> None:
    assert scan_strict('{"a": [1, "x"]}') == {"a": [1, "x"]}
    for doubtful in ('{"a":1,"a":2}', "[NaN]", '"\\ud800"', "[1,]", b"\xef\xbb\xbf[]", b'"\xff"', "[] x"):
        assert scan_strict(doubtful) is None
    assert scan_strict("[1, 2, 3]", max_bytes=4) is None
    # numbers and depth are left to the caller: the value is the C scanner's
    assert scan_strict("[1e400]") == [float("inf")]
    assert scan_strict("[" * 70 + "]" * 70) is not None
