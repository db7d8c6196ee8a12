"""What a template's grammar constrains, family by family, in words: how a call is written, how its
arguments are, where reasoning goes and how the turn ends (docs/grammar.md's table is written from it, and
a test keeps the two the same)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from chatparse.grammar.build import CallForm, block_spellings, call_form, plan
from chatparse.grammar.jsonschema import GrammarError
from chatparse.template.compile import load_template

ARGUMENTS = {
    "json-call": "one JSON object with name and arguments; arguments by the whole schema",
    "json-arguments": "a JSON object by the whole schema",
    "xml-parameters": "one element per parameter: names from `properties`, required ones present; strings raw, "
                      "other values as JSON (or as the family prints them)",
    "python-calls": "Python calls with keyword arguments, values as Python literals",
    "bare-key-object": "an object with unquoted keys, values as JSON",
    "json-list": "a JSON list of calls, each by its schema",
    "typed-parameters": "one element per parameter with the JSON type of its value: names from `properties`, "
                        "required ones present; strings raw, other values as JSON",
    "spellings": "any of the chat template's call formats (its request switch): each as its own body writes it",
    "element-tree": "nested elements named after the parameters: names from `properties`, required ones present; "
                    "strings raw, lists as item elements, objects with `properties` as their members (free-form "
                    "objects have no grammar)",
}
LAYOUTS = {
    "messages": "each call is a message of its own (header, channel, recipient)",
    "parts": "the turn is parts addressed to recipients; a call is a part",
    "sections": "the turn is fixed sections: reasoning, the answer (always written), the calls, a close",
}


@dataclass(frozen=True)
class Overview:
    """One template's grammar in words; ``missing`` is the ``GrammarError`` code when it has none."""

    template: str
    call: str = ""
    arguments: str = ""
    reasoning: str = ""
    ends: tuple[str, ...] = ()
    missing: str = ""
    why: str = ""


def _shown(text: str) -> str:
    return "`" + text.replace("\n", "\\n").replace("|", "\\|") + "`" if text else "(nothing)"


def _call_text(form: CallForm) -> str:
    if form.body == "json-call":
        body = '{"' + form.keys.get("name", "name") + '": ‹name›, "' + form.keys.get("arguments", "arguments") + \
            '": ‹arguments›}'
    elif form.body in ("xml-parameters", "typed-parameters") and form.parameter:
        body = form.parameter.replace("{key}", "‹key›").replace("{value}", "‹value›").replace("{type}", "‹type›")
        body = body.replace("{string}", "‹string›") + "…"
    else:
        body = {"json-list": "‹calls›", "python-calls": "‹name›(‹key›=‹value›, …)"}.get(form.body, "‹arguments›")
    call = form.begin.replace("{name}", "‹name›") + body + form.end.replace("{name}", "‹name›")
    if form.group:
        call = form.group[0] + call + form.separator + "…" + form.group[1]
    return call


def describe(template: Any) -> Overview:
    """``template``'s grammar in words (a built-in name, a dict or a compiled template)."""
    compiled = load_template(template)
    name = template if isinstance(template, str) else str(compiled.source.get("name", "(template)"))
    try:
        p = plan(compiled)
        form = call_form(p.calls)
        content = compiled.fields.get("content")
        layout = (content.ext.write or {}).get("layout") if content is not None else None
        reasoning = "—"
        if p.thinking is not None:
            reasoning = " or ".join(f"{_shown(opened)} free text {_shown(closed)}"
                                    for opened, closed in block_spellings(p.thinking))
    except GrammarError as error:
        return Overview(template=name, missing=error.code, why=str(error).split(";")[0])
    arguments = ARGUMENTS[form.body]
    if layout in LAYOUTS:
        arguments += f" ({LAYOUTS[layout]})"
    call = _shown(_call_text(form))
    if form.body == "spellings":  # each spelling inside the call's own markers
        spellings = (p.calls.ext.write or {}).get("spellings", [])
        call = " or ".join(_shown(_call_text(dataclasses.replace(
            form, begin=form.begin + sp["call"].split("{body}")[0], end=sp["call"].split("{body}")[1] + form.end,
            body=sp["body"], parameter=sp.get("parameter", ""), keys=sp.get("keys", {})))) for sp in spellings)
    return Overview(template=name, call=call, arguments=arguments, reasoning=reasoning, ends=p.ends)


def markdown_table(templates: list[str]) -> str:
    """The docs' table: one row per template (‹name›, ‹arguments›, ‹key›, ‹value›: what the grammar fills in
    from the tools)."""
    rows = ["| template | a call is written | arguments | reasoning | end markers it may write |",
            "|---|---|---|---|---|"]
    for name in templates:
        o = describe(name)
        if o.missing:
            rows.append(f"| {name} | no grammar (`{o.missing}`): {o.why} | | | |")
            continue
        ends = ", ".join(_shown(e) for e in o.ends) or "none (the text stops)"
        rows.append(f"| {name} | {o.call} | {o.arguments} | {o.reasoning} | {ends} |")
    return "\n".join(rows) + "\n"


START, END = "<!-- grammar-families:start -->", "<!-- grammar-families:end -->"


def update_section(text: str, table: str) -> str:
    """``text`` (a markdown page) with the part between ``START`` and ``END`` replaced by ``table``."""
    head, found, rest = text.partition(START)
    _, found_end, tail = rest.partition(END)
    if not found or not found_end:
        raise ValueError(f"the page has no {START} ... {END} section")
    return head + START + "\n" + table + END + tail
