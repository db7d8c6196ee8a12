"""The v1 (transformers) form of a built-in: what ``tokenizer.parse_response`` itself accepts. chatparse's
extension keys are dropped or translated into v1 terms and the content parsers transformers lacks are
translated where v1 can say the same; ``V1Form.losses`` says, one sentence each, what the v1 form then
parses differently. A built-in whose tool calls v1 cannot express is refused (``NotV1Error``) with the
reason."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import regex

from chatparse.content.registry import get_content_parser, known_content_parsers
from chatparse.errors import TemplateError
from chatparse.template.extensions import EXTENSION_KEY

# json-calls reading one call object per region, as v1's json parser plus a transform of its paths.
_CALL_TRANSFORM = {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}}
_V1_CALL_TRANSFORM = {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}}
_TRANSLATABLE_CALL_ARGS = {"accept", "name_keys", "arguments_keys"}
# xml-params parameters closed by one fixed tag, as v1's xml-inline: these keys only.
_TRANSLATABLE_PARAM_ARGS = {"param_open", "value_close", "value_ends", "strip_newlines", "trailer"}


class NotV1Error(TemplateError):
    """The built-in cannot be written as a v1 template: the reason names the field and what v1 lacks."""

    code = "not_v1_expressible"


@dataclass(frozen=True)
class V1Form:
    """A v1 template (a fresh dict) and what it parses differently from the built-in, one sentence each."""

    template: dict[str, Any]
    losses: tuple[str, ...]


def to_v1(name: str, template: Mapping[str, Any]) -> V1Form:
    """The v1 form of the built-in ``name`` whose template is ``template``; ``NotV1Error`` when v1 cannot
    express it."""
    v1 = copy.deepcopy(dict(template))
    losses: list[str] = []
    ext = v1.pop(EXTENSION_KEY, {})
    fields: dict[str, Any] = v1["fields"]
    for field_name, spec in fields.items():
        _field_to_v1(name, field_name, spec, losses)
    _end_to_v1(fields, ext, losses)
    return V1Form(v1, tuple(losses))


def _field_to_v1(name: str, field_name: str, spec: dict[str, Any], losses: list[str]) -> None:
    ext = spec.pop(EXTENSION_KEY, {})
    where = f"field '{field_name}'"
    if ext.get("ends_with_value"):
        raise NotV1Error(
            f"the built-in {name!r} cannot be written as a v1 template: {where} has no close marker and ends where "
            "its JSON/Python value ends (chatparse.ends_with_value), which v1 cannot say; without it the region "
            "runs to the end of the output and any text after the value breaks the parse. Use the built-in with "
            "chatparse (chatparse.integrations.transformers.parse_response).", field=field_name,
            key=f"{EXTENSION_KEY}.ends_with_value")
    parser = spec.get("content", "text")
    if parser == "json-or-code":  # its JSON bodies are v1's json; the raw-code bodies are what v1 loses
        spec["content"] = parser = "json"
        spec.get("content_args", {}).pop("code_prefix", None)
        losses.append(f"{where}: raw code to the code interpreter (a body that is not JSON: harmony's to=python, "
                      "Functionary's >>>python) fails the parse; the built-in reads it as the call with {'code': ...}")
    if parser == "json" and spec.get("content_args", {}).pop("raw_control_chars", False):
        losses.append(f"{where}: a raw control character (a literal newline or tab) inside a JSON string fails the "
                      "parse (transformers' json.loads is strict); the built-in keeps it as written")
        if not spec["content_args"]:
            del spec["content_args"]
    if parser == "json-calls":
        _json_calls_to_v1(name, field_name, spec, losses)
    elif parser == "xml-params":
        if not _xml_params_to_v1(field_name, spec, losses):
            raise NotV1Error(
                f"the built-in {name!r} cannot be written as a v1 template: {where} reads parameters with the "
                "xml-params parser in a form v1's xml-inline cannot restate (a value parser chosen per parameter "
                "kind, a close tag that repeats part of the open tag, or a parameter syntax with more than a key). "
                "Use the built-in with chatparse (chatparse.integrations.transformers.parse_response).",
                field=field_name, key="content_args")
    elif not get_content_parser(parser).compatible:
        raise NotV1Error(
            f"the built-in {name!r} cannot be written as a v1 template: {where} is read by the content parser "
            f"{parser!r}, which transformers does not have and no v1 parser replaces (v1 has "
            f"{', '.join(n for n in known_content_parsers() if get_content_parser(n).compatible)}). Use the built-in "
            "with chatparse (chatparse.integrations.transformers.parse_response).", field=field_name, key="content")
    if ext.get("structure") is not None and ext.get("guard", True):
        close = spec.get("close")
        marker = repr(close if isinstance(close, str) else close[0]) if close else "its close pattern"
        losses.append(f"{where}: its close marker written inside a string of the value ({marker} in an argument) "
                      "ends the region there; the built-in reads the value's syntax and ignores it")
    if ext.get("truncation"):
        losses.append(f"{where}: a region cut off by the token limit is a parse error or a partial value; the "
                      "built-in reports it as 'truncated' and keeps the complete calls before it")
    if ext.get("strip_joined"):
        args = spec.setdefault("content_args", {})
        args["strip"] = True
        losses.append(f"{where}: each piece (the text between other regions) is stripped before they are joined; "
                      "the built-in strips only the joined text, so whitespace between two pieces is lost in v1")
    if ext.get("python_literals"):
        losses.append(f"{where}: argument values written as Python literals (['a', 'b'], None) stay strings")


def _json_calls_to_v1(name: str, field_name: str, spec: dict[str, Any], losses: list[str]) -> None:
    """One call object per region (``accept: ["object"]``, a ``{name}``/``{arguments}`` transform per item)
    is v1's json parser with the transform reading ``{content.name}`` and ``{content.arguments}``."""
    args = spec.get("content_args", {})
    name_keys = args.get("name_keys", ["name"])
    arguments_keys = args.get("arguments_keys", ["arguments", "parameters"])
    one_object = args.get("accept", ["array"]) == ["object"]
    if not (one_object and set(args) <= _TRANSLATABLE_CALL_ARGS and name_keys == ["name"]
            and "arguments" in arguments_keys and spec.get("transform") == _CALL_TRANSFORM
            and spec.get("transform_each")):
        raise NotV1Error(
            f"the built-in {name!r} cannot be written as a v1 template: field '{field_name}' reads tool calls with "
            f"the json-calls parser in a form v1's json parser cannot restate (content_args {dict(args)}: a list "
            "of calls in one region, calls back to back, other key names, or arguments written as a string or a "
            "Python literal). Use the built-in with chatparse (chatparse.integrations.transformers.parse_response).",
            field=field_name, key="content_args")
    spec["content"] = "json"
    spec.pop("content_args", None)
    losses.append(f"field '{field_name}': a raw control character inside a JSON string, or arguments written as a "
                  "string holding the JSON object, fail the parse in v1; the built-in repairs both (docs/tools.md)")
    spec.pop("transform_each", None)
    spec["transform"] = copy.deepcopy(_V1_CALL_TRANSFORM)
    other = [k for k in arguments_keys if k != "arguments"]
    losses.append(f"field '{field_name}': a call must spell its keys 'name' and 'arguments' (the built-in also "
                  f"reads {other} and a call without arguments)")


def _xml_params_to_v1(field_name: str, spec: dict[str, Any], losses: list[str]) -> bool:
    """Parameters each closed by a fixed tag (``<parameter=K>V</parameter>``) are v1's ``xml-inline`` with a
    ``tag_pattern`` of the open, the value and the close; False when the form says more than that (a value
    parser per kind, a close that repeats part of the open, a JSON body)."""
    args = spec.get("content_args", {})
    if not set(args) <= _TRANSLATABLE_PARAM_ARGS or "{" in args["value_close"]:
        return False
    if set(regex.compile(args["param_open"]).groupindex) != {"key"}:
        return False
    newline = "\\n?" if args.get("strip_newlines") else ""
    spec["content"] = "xml-inline"
    spec["content_args"] = {
        "tag_pattern": f"{args['param_open']}{newline}(?P<value>.*?){newline}{regex.escape(args['value_close'])}"}
    if args.get("value_ends") == "next_param":
        losses.append(f"field '{field_name}': a parameter whose close tag is missing (the model went on with the next "
                      "parameter or ended the call) is dropped; the built-in ends it at the next parameter")
    return True


def _end_to_v1(fields: dict[str, Any], ext: Mapping[str, Any], losses: list[str]) -> None:
    """v1 has no end of turn: the end markers become the close of the implicit field, when it has none (the
    usual ``...answer<|im_end|>`` then parses as the built-in does)."""
    end = list(ext.get("end", []))
    implicit = next((n for n, f in fields.items() if "open" not in f and "open_pattern" not in f), None)
    if not end:
        return
    if implicit is not None and "close" not in fields[implicit] and "close_pattern" not in fields[implicit]:
        fields[implicit]["close"] = end
        losses.append(f"the end-of-turn markers {end} close the '{implicit}' field instead of ending the message: "
                      "text after one (padding, a next turn written past a missed stop) is parsed as more "
                      f"'{implicit}'; one inside an open region (a call cut off at the end) stays in it")
    else:
        losses.append(f"the end-of-turn markers {end} are not recognised: inside an open region they stay in its "
                      "text; outside regions they are dropped with any other text")
    next_turn = ext.get("next_turn")
    if next_turn:
        losses.append(f"a next turn written past a missed stop ({list(next_turn)} with no end marker before it) is "
                      "parsed as part of the message; the built-in cuts it off into 'trailing'")
    drop = ext.get("drop")
    if drop and implicit is not None:
        losses.append(f"stray markers {list(drop)} outside regions (a second '</think>') stay in '{implicit}'")
