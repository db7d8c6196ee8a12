"""How the model writes a call, as the chat template renders it: the ``chatparse.write`` form of the
``tool_calls`` field (what ``chatparse.tool_grammar`` builds a grammar from), cut out of the probe renders
(the call with its name and body replaced by ``{name}`` and ``{body}``, the wrapper around all calls, the
text between calls, an XML-like parameter) and kept only when spelling every probe call with it gives back
exactly what the chat template rendered."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import regex

from chatparse.synthesize.calls import CallFormat, Sections, _Reader, _xml_params, json_values, same_json
from chatparse.synthesize.probes import CALL_A, CALL_B, CALL_NONE, CALL_TYPED, Call
from chatparse.synthesize.text import Lexer

Form = dict[str, Any]
Speller = Callable[[Call], str]


class NoWrittenForm(ValueError):
    """The renders do not give a written form (the message says why)."""


def written_form(calls: CallFormat, sections: Sections, lexer: Lexer) -> Form:
    """The ``chatparse.write`` form of ``calls``, checked against every probe render. Raises
    ``NoWrittenForm`` (with the reason) when the syntax has no body kind or the renders do not fit one."""
    builders: dict[str, Callable[[CallFormat, Sections, Lexer], tuple[Form, Speller]]] = {
        "json-object": _json_object, "json-array": _json_array, "name-json": _name_json,
        "xml-params": _xml_params_form, "bare-key-object": _bare_key}
    if calls.syntax not in builders:
        raise NoWrittenForm(f"no body kind writes {calls.syntax} calls yet")
    form, spell = builders[calls.syntax](calls, sections, lexer)
    form = _tidy(form)
    start = (form.get("group") or [""])[0] or regex.split(r"\{name\}|\{body\}|\{index\}", form["call"])[0]
    if not start.strip():
        raise NoWrittenForm(f"a call starts with its name, no fixed text before it ({form['call']!r}): nothing "
                            "tells a call from text")
    probes: list[tuple[str | None, list[Call]]] = [(sections.one, [CALL_A]), (sections.none, [CALL_NONE]),
                                                    (sections.typed, [CALL_TYPED])]
    if calls.multiple:
        probes.append((sections.two, [CALL_A, CALL_B]))
    for rendered, probe in probes:
        if rendered is None:
            continue
        spelled = spell_calls(form, probe, spell)
        if spelled != rendered:
            raise NoWrittenForm(f"the form {form['call']!r} spells {spelled[:160]!r} where the chat template "
                                f"renders {rendered[:160]!r}")
    return form


def spell_calls(form: Mapping[str, Any], calls: Sequence[Call], body: Speller) -> str:
    """``calls`` as ``form`` writes them (``{index}`` counts from 0), with ``body`` writing each body."""
    group = form.get("group") or ("", "")
    texts = [form["call"].replace("{name}", c.name).replace("{index}", str(i)).replace("{body}", body(c))
             for i, c in enumerate(calls)]
    return str(group[0]) + str(form.get("separator", "")).join(texts) + str(group[1])


def _tidy(form: Form) -> Form:
    """Layout the renders put before every call (``\\n<invoke``) moves into the group's opener and the
    separator, so that a call starts at its marker; empty keys are left out."""
    group = form.get("group")
    call = form["call"]
    lead = call[: len(call) - len(call.lstrip())]
    if group and lead:
        form["call"] = call[len(lead):]
        form["group"] = [group[0] + lead, group[1]]
        form["separator"] = form.get("separator", "") + lead
    return {k: v for k, v in form.items() if v not in ("", None, [], {})}


def _group(calls: CallFormat) -> list[str] | None:
    return [calls.section_open, calls.section_close] if calls.section_open or calls.section_close else None


def _json_style(section: str, call: Call) -> Callable[[Any], str]:
    """JSON as the chat template writes it (``", "``/``": "`` or compact separators)."""
    for separators in ((", ", ": "), (",", ":")):
        for ascii_only in (False, True):
            def dump(value: Any, s: tuple[str, str] = separators, a: bool = ascii_only) -> str:
                return json.dumps(value, ensure_ascii=a, separators=s)
            if dump(dict(call.arguments)) in section:
                return dump
    raise NoWrittenForm(f"the arguments {dict(call.arguments)} are not written as plain JSON in {section[:160]!r}")


def _object_form(text: str, call: Call) -> tuple[str, int, int]:
    """The call object of ``call`` in ``text`` with its name as ``{name}`` and its arguments as ``{body}``,
    and where the object starts and ends in ``text``."""
    for start, end in _objects(text):
        obj = text[start:end]
        inner = next(((a + 1, b + 1) for a, b, v in json_values(obj[1:]) if same_json(v, call.arguments)), None)
        name = json.dumps(call.name)
        if inner is None:
            continue
        head, tail = obj[: inner[0]], obj[inner[1]:]
        if head.count(name) + tail.count(name) != 1:
            continue
        named = name[:1] + "{name}" + name[-1:]
        return head.replace(name, named) + "{body}" + tail.replace(name, named), start, end
    raise NoWrittenForm(f"no call object with the arguments as a JSON value in {text[:160]!r} (arguments "
                        "written as a JSON string have no body kind yet)")


def _objects(text: str) -> list[tuple[int, int]]:
    """Where the JSON objects of ``text`` are: outermost ones and those directly inside an outermost array."""
    out: list[tuple[int, int]] = []
    for start, end, value in json_values(text):
        if isinstance(value, dict):
            out.append((start, end))
        elif isinstance(value, list):
            out += [(start + 1 + a, start + 1 + b) for a, b, v in json_values(text[start + 1: end - 1])
                    if isinstance(v, dict)]
    return out


def _json_object(calls: CallFormat, sections: Sections, lexer: Lexer) -> tuple[Form, Speller]:
    core, _, _ = _object_form(sections.one, CALL_A)
    form: Form = {"call": calls.item_open + core + calls.item_close, "body": "json-arguments",
                  "separator": calls.separator, "group": _group(calls)}
    dump = _json_style(sections.one, CALL_A)
    return form, lambda c: dump(dict(c.arguments))


def _json_array(calls: CallFormat, sections: Sections, lexer: Lexer) -> tuple[Form, Speller]:
    core, start, end = _object_form(sections.one, CALL_A)
    one = sections.one
    array_open, array_close = one[len(calls.section_open): start], one[end: len(one) - len(calls.section_close)]
    separator = ", "
    if calls.multiple and sections.two is not None:
        first = _object_form(sections.two, CALL_A)
        after = sections.two.find("{", first[2])
        if after < 0:
            raise NoWrittenForm(f"no second call object after the first in {sections.two[:160]!r}")
        separator = sections.two[first[2]: after]
    form: Form = {"call": core, "body": "json-arguments", "separator": separator,
                  "group": [calls.section_open + array_open, array_close + calls.section_close]}
    dump = _json_style(one, CALL_A)
    return form, lambda c: dump(dict(c.arguments))


def _index_form(texts: Sequence[str]) -> str:
    """One text for the texts written between each call's name and its body: a digit run that counts
    the calls (``:0``, ``:1``) becomes ``{index}``."""
    if len(set(texts)) == 1:
        return texts[0]
    splits = [regex.split(r"(\d+)", t) for t in texts]
    if len({len(s) for s in splits}) != 1:
        raise NoWrittenForm(f"the calls are written with different texts after their names: {list(texts)}")
    out = []
    for i, pieces in enumerate(zip(*splits, strict=True)):
        if len(set(pieces)) == 1:
            out.append(pieces[0])
        elif i % 2 and list(pieces) == [str(n) for n in range(len(pieces))]:
            out.append("{index}")
        else:
            raise NoWrittenForm(f"the calls are written with different texts after their names: {list(texts)}")
    return "".join(out)


def _name_json(calls: CallFormat, sections: Sections, lexer: Lexer) -> tuple[Form, Speller]:
    if calls.item_open_pattern:
        raise NoWrittenForm("each call's opener holds an id of its own (no form writes ids yet)")
    reader = _Reader(lexer)
    text, probe = (sections.two, [CALL_A, CALL_B]) if calls.multiple and sections.two else (sections.one, [CALL_A])
    items = reader.name_json(text, probe)
    if items is None:
        raise NoWrittenForm("the call's name and arguments were not found again")
    after = _index_form([text[i.name_end: i.args_start] for i in items])
    form: Form = {"call": calls.item_open + "{name}" + after + "{body}" + calls.item_close, "body": "json-arguments",
                  "separator": calls.separator, "group": _group(calls)}
    dump = _json_style(sections.one, CALL_A)
    return form, lambda c: dump(dict(c.arguments))


def _xml_params_form(calls: CallFormat, sections: Sections, lexer: Lexer) -> tuple[Form, Speller]:
    xml = calls.xml
    params = _xml_params(sections.one, CALL_A, 0)
    prefix = xml["param_prefix"]
    if params is None or len(set(params.betweens)) != 1 or not params.betweens[0].endswith(prefix) or \
            not params.after_name.endswith(prefix):
        raise NoWrittenForm("the parameters are not written the same way one after another")
    value_tail = params.betweens[0][: -len(prefix)]
    name_after = params.after_name[: -len(prefix)]
    connector = _connector_form(params.connectors, xml)
    rest = params.tail
    if calls.section_close:
        if not rest.endswith(calls.section_close):
            raise NoWrittenForm(f"the last parameter is not followed by the calls' close {calls.section_close!r}")
        rest = rest[: -len(calls.section_close)]
    if not rest.startswith(value_tail):
        raise NoWrittenForm(f"the last value is followed by {rest!r}, not by {value_tail!r} as the others")
    parameter = prefix + "{key}" + connector + "{value}" + value_tail
    form: Form = {"call": calls.item_open + "{name}" + name_after + "{body}" + rest[len(value_tail):],
                  "body": "xml-parameters", "parameter": parameter, "separator": calls.separator,
                  "group": _group(calls)}
    if xml.get("python_values"):
        raise NoWrittenForm("values written as Python literals have no written form on this body kind yet")

    def spell(call: Call) -> str:
        return "".join(parameter.replace("{key}", k).replace("{string}", "true" if isinstance(v, str) else "false")
                       .replace("{value}", v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))
                       for k, v in call.arguments.items())
    return form, spell


def _connector_form(connectors: Sequence[str], xml: Mapping[str, Any]) -> str:
    """The text between a key and its value; DeepSeek's ``string="true"`` (raw text) / ``"false"`` (JSON)
    kind is ``{string}``."""
    if len(set(connectors)) == 1:
        return connectors[0]
    kinds = xml.get("kinds") or {}
    if kinds != {"true": "text", "false": "json"}:
        raise NoWrittenForm(f"the text between a key and its value varies ({list(connectors)}) in a way no form "
                            "writes")
    match = regex.search(xml["connector"], connectors[0])
    if match is None:
        raise NoWrittenForm(f"the connector {connectors[0]!r} does not match {xml['connector']!r}")
    text = connectors[0]
    return text[: match.start("kind")] + "{string}" + text[match.end("kind"):]


def _bare_key(calls: CallFormat, sections: Sections, lexer: Lexer) -> tuple[Form, Speller]:
    assert calls.delimiters is not None
    opened, closed = calls.delimiters
    two = sections.two or ""
    # Keys written in sorted order (CALL_B's are not): the form says so.
    ordered = bool(two) and two.find("content:") < two.find("path:")
    form: Form = {"call": calls.item_open + "{name}" + calls.name_after + "{body}" + calls.item_close,
                  "body": "bare-key-object", "separator": calls.separator, "group": _group(calls),
                  "values": {"order": "sorted"} if ordered else {}}

    def value(v: Any) -> str:
        if isinstance(v, str):
            return opened + v + closed
        if isinstance(v, Mapping):
            items = sorted(v.items()) if ordered else list(v.items())
            return "{" + ",".join(f"{k}:{value(x)}" for k, x in items) + "}"
        if isinstance(v, list):
            return "[" + ",".join(value(x) for x in v) + "]"
        return json.dumps(v)
    return form, lambda c: value(dict(c.arguments))
