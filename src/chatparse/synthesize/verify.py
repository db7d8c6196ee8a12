"""Round-trip verification: generate assistant messages, render each as the model would write it (the text
after a generation prompt), parse it with the synthesized template given the full prompt as ``prefix``, and
compare with the message. Only what the chat template renders is compared (a template that drops content
beside calls cannot show it); what it does not render is reported, not guessed."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatparse.engine.api import parse_response
from chatparse.errors import ChatparseError
from chatparse.synthesize import probes as P
from chatparse.synthesize.infer import Format, Prompt, Session
from chatparse.synthesize.render import Failure
from chatparse.synthesize.text import Lexer
from chatparse.tools.jsonvalue import json_type

FIELDS = ("content", "thinking", "tool_calls")
VALUE_TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")

_PROSE = ["The forecast says light rain.", "Done.", "Here is the plan:\n1. check\n2. write", "Zürich ist schön.",
          "東京は晴れです。", "서울은 맑아요.", "Party time 🎉 — see you!", 'She said "hello" and left.',
          "It's a simple case; nothing more.", "Path: C:\\temp\\file.txt", "Use a < b and b > c.",
          "Tabs\tand  double  spaces.", "Line one\n\nLine three after a blank line."]
_STRINGS = ["Seoul", "notes/today.md", "a b c", "007", "true", "3.5", "null", "", "Zürich", "東京タワー",
            "서울 날씨", "emoji 🎉 ok", 'say "hi"', "it's", "back\\slash", "line one\nline two", "{not json}",
            "[1, 2]", "  padded  ", "key: value, other: 1", "x=1; y=2"]
_INTEGERS = [0, 2, -7, 42, 1000000, 2147483648]
_NUMBERS = [2.5, -0.125, 1e-05, 3.25, 100.5]


@dataclass(frozen=True)
class Case:
    """One generated assistant message: ``message`` as the template reads it, ``expected`` as a parser
    should return it (``content``/``thinking`` stripped, calls as ``{"name", "arguments"}``)."""

    name: str
    kind: str
    message: Mapping[str, Any]
    expected: Mapping[str, Any]


@dataclass
class Check:
    """One message parsed after one generation prompt."""

    case: str
    kind: str
    prompt: str
    output: str
    expected: Mapping[str, Any]
    got: Mapping[str, Any] | None
    error: str | None = None
    wrong: tuple[str, ...] = ()

    def describe(self) -> str:
        what = self.error or "; ".join(self.wrong)
        return f"{self.case} ({self.kind}) after prompt '{self.prompt}': {what}; output {self.output[:300]!r}"


@dataclass
class Tally:
    checked: int = 0
    exact: int = 0

    def add(self, ok: bool) -> None:
        self.checked += 1
        self.exact += ok

    def text(self) -> str:
        return f"{self.exact}/{self.checked}"


@dataclass
class Report:
    """What round-trips: per field and per argument type, the failures, and what was not compared and why."""

    messages: int = 0
    checks: int = 0
    exact: int = 0
    fields: dict[str, Tally] = field(default_factory=lambda: {f: Tally() for f in FIELDS})
    value_types: dict[str, Tally] = field(default_factory=lambda: {t: Tally() for t in VALUE_TYPES})
    prompts: dict[str, Tally] = field(default_factory=dict)
    kinds: dict[str, Tally] = field(default_factory=dict)
    failures: list[Check] = field(default_factory=list)
    not_rendered: list[str] = field(default_factory=list)
    rendered_as: list[str] = field(default_factory=list)
    not_checked: dict[str, int] = field(default_factory=dict)
    typing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every compared message round-tripped (and at least one was compared)."""
        return self.checks > 0 and self.exact == self.checks

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "messages": self.messages, "checks": self.checks, "exact": self.exact,
                "fields": {k: v.text() for k, v in self.fields.items() if v.checked},
                "argument_types": {k: v.text() for k, v in self.value_types.items() if v.checked},
                "prompts": {k: v.text() for k, v in self.prompts.items()},
                "kinds": {k: v.text() for k, v in self.kinds.items()},
                "not_rendered": self.not_rendered, "rendered_as": self.rendered_as,
                "not_checked": self.not_checked, "typing": self.typing,
                "failures": [c.describe() for c in self.failures[:50]]}


def same_value(a: Any, b: Any) -> bool:
    """Equal as JSON values: numbers by value (``3.0`` is ``3``), booleans never equal to numbers, dicts
    in any key order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


class Generator:
    """Seeded assistant messages within what the template renders."""

    def __init__(self, fmt: Format, seed: int, markers: Sequence[str]) -> None:
        self.fmt = fmt
        self.rng = random.Random(seed)
        self.strings = _STRINGS
        self.marked = [f"text with {m} inside" for m in markers]
        self.marker_used = False  # at most one marker text per message, in a top-level string argument

    def value(self, schema: Mapping[str, Any], depth: int = 0) -> Any:
        kind = schema.get("type")
        rng = self.rng
        if schema.get("nullable") and rng.random() < 0.5:
            return None
        if kind == "integer":
            return rng.choice(_INTEGERS)
        if kind == "number":
            return rng.choice(_NUMBERS)
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "array":
            return [rng.choice(self.strings) for _ in range(rng.randint(0, 3))]
        if kind == "object":
            return self.obj(depth)
        return rng.choice(self.strings)

    def obj(self, depth: int) -> dict[str, Any]:
        rng = self.rng
        out: dict[str, Any] = {}
        for key in rng.sample(["room", "tags", "open", "score", "note", "inner", "label"], rng.randint(0, 4)):
            pick = rng.randint(0, 5)
            if key == "inner" and depth < 2:
                out[key] = self.obj(depth + 1)
            elif pick == 0:
                out[key] = rng.choice(_INTEGERS)
            elif pick == 1:
                out[key] = rng.random() < 0.5
            elif pick == 2:
                out[key] = None
            elif pick == 3:
                out[key] = [rng.choice(_INTEGERS), rng.choice(self.strings)]
            else:
                out[key] = rng.choice(self.strings)
        return out

    def call(self) -> P.Call:
        tool = self.rng.choice(P.TOOLS)["function"]
        props = tool["parameters"]["properties"]
        required = set(tool["parameters"]["required"])
        keys = [k for k in props if k in required or self.rng.random() < 0.6]
        arguments = {k: self.value(props[k]) for k in keys}
        strings = [k for k in keys if props[k].get("type") == "string"]
        if strings and self.marked and not self.marker_used and self.rng.random() < 0.3:
            self.marker_used = True
            arguments[self.rng.choice(strings)] = self.rng.choice(self.marked)
        return P.Call(tool["name"], arguments)

    def case(self, index: int, kind: str) -> Case:
        rng = self.rng
        form = self.fmt.form
        self.marker_used = False
        content = rng.choice(_PROSE) if "content" in kind else None
        reasoning = rng.choice(_PROSE) if "reasoning" in kind else None
        calls: list[P.Call] = []
        if "calls" in kind:
            many = self.fmt.calls is not None and self.fmt.calls.multiple
            calls = [self.call() for _ in range(rng.randint(1, 3) if many else 1)]
        message = P.assistant(form, content=content, reasoning=reasoning, calls=calls)
        expected: dict[str, Any] = {}
        if content and content.strip():
            expected["content"] = content.strip()
        if reasoning and reasoning.strip():
            expected["thinking"] = reasoning.strip()
        if calls:
            expected["tool_calls"] = [{"name": c.name, "arguments": dict(c.arguments)} for c in calls]
        return Case(f"m{index:03d}", kind, message, expected)


def _normalise(message: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("content", "thinking"):
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            out[key] = value.strip()
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [{"name": c.get("function", c).get("name"), "arguments": c.get("function", c).get("arguments")}
                             for c in calls]
    for key in ("malformed", "unparsed"):
        if message.get(key):
            out[key] = message[key]
    return out


class Verifier:
    """Checks the synthesized template on generated messages after every generation prompt."""

    def __init__(self, session: Session, fmt: Format, template: Mapping[str, Any], lexer: Lexer) -> None:
        self.s = session
        self.fmt = fmt
        self.template = template
        self.lexer = lexer
        self.report = Report()
        self.relocate: dict[str, str] = {}  # kind -> "content becomes thinking"

    def kinds(self) -> list[str]:
        """The message kinds the template renders, found by rendering a sentinel message of each kind."""
        fmt = self.fmt
        kinds = ["content"]
        candidates = []
        if fmt.reasoning is not None:
            candidates.append("reasoning+content")
        if fmt.calls is not None:
            candidates += ["calls", "content+calls"]
            if fmt.reasoning is not None:
                candidates += ["reasoning+calls", "reasoning+content+calls"]
        base = self.s.base()
        for kind in candidates:
            message = P.assistant(fmt.form, content=P.CONTENT if "content" in kind else None,
                                  reasoning=P.REASONING if "reasoning" in kind else None,
                                  calls=[P.CALL_A] if "calls" in kind else [])
            rendered = self.s.render(f"kind {kind}", [*base, message])
            what = kind.replace("+", " + ").replace("calls", "tool calls")
            if isinstance(rendered, Failure):
                self.report.not_rendered.append(f"{what}: the template refuses it ({rendered.reason[:160]})")
                continue
            text = rendered[rendered.rfind(P.USER):]
            missing = [name for name, sentinel, needed in (("reasoning", P.REASONING, "reasoning" in kind),
                                                           ("content", P.CONTENT, "content" in kind),
                                                           ("tool calls", P.CALL_A.name, "calls" in kind))
                       if needed and sentinel not in text]
            if missing:
                self.report.not_rendered.append(f"{what}: the template does not render the {' and '.join(missing)}")
                continue
            if "content" in kind and "calls" in kind and any(
                    e in text[text.find(P.CONTENT): text.find(P.CALL_A.name)] for e in fmt.end):
                self.report.not_rendered.append(f"{what}: the template writes the content and the calls as two "
                                                "turns (the content's turn ends before the calls)")
                continue
            if fmt.reasoning is not None and "content" in kind and "reasoning" not in kind:
                before = text[: text.find(P.CONTENT)].rstrip()
                if before.endswith(fmt.reasoning.open):
                    self.relocate[kind] = "thinking"
                    self.report.rendered_as.append(f"{what}: the content is written as reasoning (compared as "
                                                   "thinking)")
            kinds.append(kind)
        return kinds

    def run(self, count: int, seed: int) -> Report:
        kinds = self.kinds()
        markers = self._markers()
        generator = Generator(self.fmt, seed, markers)
        report = self.report
        report.typing = list(self.fmt.calls.typing) if self.fmt.calls is not None else []
        for index in range(count):
            kind = kinds[index % len(kinds)]
            case = generator.case(index, kind)
            if kind in self.relocate and "content" in case.expected:
                expected = dict(case.expected)
                expected["thinking"] = expected.pop("content")
                case = Case(case.name, case.kind, case.message, expected)
            report.messages += 1
            self._check_case(case, with_tool_history=index % 4 == 3)
        return report

    def _markers(self) -> list[str]:
        fmt = self.fmt
        out = list(fmt.end[:1]) + list(fmt.next_turn[:1])
        if fmt.reasoning is not None:
            out.append(fmt.reasoning.close)
        if fmt.calls is not None:
            out += [m.strip() for m in (fmt.calls.item_close, fmt.calls.section_close) if m.strip()]
            if fmt.calls.xml:
                out.append(fmt.calls.xml["value_close"])
        return [m for m in dict.fromkeys(out) if m and (fmt.calls is None or fmt.calls.delimiters is None
                                                     or m not in fmt.calls.delimiters)]

    def _check_case(self, case: Case, *, with_tool_history: bool) -> None:
        base = self.s.base()
        contexts: list[tuple[bool, list[dict[str, Any]]]] = [(False, base)]
        if with_tool_history and self.fmt.calls is not None:
            form = self.fmt.form
            contexts.append((True, [*base, P.assistant(form, calls=[P.CALL_A]), P.tool_result(form, P.CALL_A)]))
        for after_tool, history in contexts:
            rendered = self.s.render(f"{case.name}{' after a tool result' if after_tool else ''}",
                                     [*history, dict(case.message)])
            if isinstance(rendered, Failure):
                self._skip(f"the template refuses the message ({rendered.reason[:80]})")
                continue
            for prompt in self.fmt.prompts:
                if prompt.after_tool != after_tool:
                    continue
                output = self._continuation(prompt, rendered, has_reasoning="thinking" in case.expected)
                if output is None:
                    self._skip(f"its render does not continue prompt '{prompt.label}'")
                    continue
                self._check(case, prompt, output)

    def _skip(self, reason: str) -> None:
        self.report.not_checked[reason] = self.report.not_checked.get(reason, 0) + 1

    def _continuation(self, prompt: Prompt, rendered: str, *, has_reasoning: bool) -> str | None:
        """What the model writes after ``prompt`` for this message: the rest of the render when the prompt is
        its prefix; when the prompt pre-writes reasoning markers the history form leaves out (an opened or
        empty block), the rest after the shared part, if it is consistent with them."""
        if rendered.startswith(prompt.text):
            return rendered[len(prompt.text):]
        shared = self.lexer.prefix_len([prompt.text, rendered])
        written = prompt.text[shared:].strip()
        rest = rendered[shared:]
        if not written and shared == len(prompt.text.rstrip()):
            return rest.lstrip()  # the prompt ends with layout whitespace its history form does not write
        reasoning = self.fmt.reasoning
        if reasoning is None or has_reasoning or not written:
            return None
        remaining = written
        opened = False
        while remaining:
            if remaining.startswith(reasoning.open):
                remaining, opened = remaining[len(reasoning.open):].lstrip(), True
            elif remaining.startswith(reasoning.close):
                remaining, opened = remaining[len(reasoning.close):].lstrip(), False
            else:
                return None
        if opened and not rest.lstrip().startswith(reasoning.close):
            return None
        if not opened and rest.lstrip().startswith(reasoning.open):
            return None
        return rest

    def _check(self, case: Case, prompt: Prompt, output: str) -> None:
        report = self.report
        report.checks += 1
        error = None
        got: dict[str, Any] | None = None
        try:
            got = _normalise(parse_response(output, dict(self.template), prefix=prompt.text, tools=P.TOOLS))
        except ChatparseError as exc:
            error = f"{type(exc).__name__} [{exc.code}]: {str(exc)[:300]}"
        wrong = self._compare(case.expected, got) if got is not None else ("the parse raised",)
        exact = not wrong and error is None
        report.exact += exact
        report.prompts.setdefault(prompt.label, Tally()).add(exact)
        report.kinds.setdefault(case.kind, Tally()).add(exact)
        for name in FIELDS:
            if name in case.expected or (got is not None and name in got):
                report.fields[name].add(got is not None and name in case.expected and name in got
                                        and _field_equal(name, case.expected[name], got[name]))
        self._tally_arguments(case.expected, got)
        if not exact:
            report.failures.append(Check(case.name, case.kind, prompt.label, output, case.expected, got, error,
                                         tuple(wrong)))

    def _compare(self, expected: Mapping[str, Any], got: Mapping[str, Any]) -> list[str]:
        wrong = []
        for key in sorted(set(expected) | set(got)):
            if key not in got:
                wrong.append(f"{key}: missing (expected {json.dumps(expected[key], ensure_ascii=False)[:120]})")
            elif key not in expected:
                wrong.append(f"{key}: unexpected {json.dumps(got[key], ensure_ascii=False)[:160]}")
            elif not _field_equal(key, expected[key], got[key]):
                wrong.append(f"{key}: expected {json.dumps(expected[key], ensure_ascii=False)[:160]}, got "
                             f"{json.dumps(got[key], ensure_ascii=False)[:160]}")
        return wrong

    def _tally_arguments(self, expected: Mapping[str, Any], got: Mapping[str, Any] | None) -> None:
        got_calls = (got or {}).get("tool_calls") or []
        for index, call in enumerate(expected.get("tool_calls", [])):
            other = got_calls[index]["arguments"] if index < len(got_calls) else None
            for key, value in call["arguments"].items():
                ok = isinstance(other, dict) and key in other and same_value(value, other[key])
                self.report.value_types[json_type(value) or "string"].add(ok)


def _field_equal(name: str, expected: Any, got: Any) -> bool:
    if name == "tool_calls":
        return (len(expected) == len(got) and all(
            e["name"] == g["name"] and isinstance(g["arguments"], dict) and same_value(e["arguments"], g["arguments"])
            for e, g in zip(expected, got, strict=True)))
    return bool(expected == got)
