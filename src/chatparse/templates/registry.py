"""Built-in response templates: one JSON data file per model family, looked up by name or detected
from a model id, a ``model_type`` or the telltale tokens of a chat template.

Each data file holds the v1 template and its metadata (models, model types, sources, prefill, whether
it needs a chatparse extension, what could only be partly expressed). Callers always get fresh copies.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

import chatparse.content  # noqa: F401  (registers the parsers chatparse-only templates name)
from chatparse.errors import ChatparseError, TemplateError
from chatparse.template.compile import set_builtin_lookup
from chatparse.templates.v1 import V1Form, to_v1

DATA_PACKAGE = "chatparse.templates"
DATA_DIR = "data"

REQUIRED_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "template": dict,
    "models": list,
    "model_types": list,
    "sources": list,
    "prefill": str,
    "chatparse_only": bool,
    "extensions": list,
    "notes": str,
}
OPTIONAL_KEYS: dict[str, type | tuple[type, ...]] = {"detect": dict}


class UnknownTemplateError(ChatparseError, KeyError):
    """No built-in template has the requested name."""

    code = "unknown_template"


def normalize_name(name: str) -> str:
    """The lookup key of a family name: ``qwen3.5``, ``qwen3_5`` and ``Qwen3.5`` are the same family."""
    return name.strip().lower().replace(".", "_")


# --- loading --------------------------------------------------------------------------------------


@cache
def _records() -> dict[str, dict[str, Any]]:
    """Every data file, validated, keyed by normalized name (loaded once, never handed out directly)."""
    records: dict[str, dict[str, Any]] = {}
    data = resources.files(DATA_PACKAGE).joinpath(DATA_DIR)
    for entry in sorted(data.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        try:
            record = json.loads(entry.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise TemplateError(
                f"built-in template file {entry.name}: expected JSON, found a syntax error ({exc})",
                code="invalid_builtin_template",
                path=entry.name,
            ) from None
        _check_record(entry.name, record)
        key = normalize_name(record["name"])
        if entry.name != key + ".json":
            raise TemplateError(
                f"built-in template file {entry.name}: expected the file name {key}.json for the family "
                f"{record['name']!r}",
                code="invalid_builtin_template",
                path=entry.name,
            )
        records[key] = record
    return records


def _check_record(file_name: str, record: Any) -> None:
    if not isinstance(record, dict):
        raise TemplateError(
            f"built-in template file {file_name}: expected a JSON object, found {type(record).__name__}",
            code="invalid_builtin_template",
            path=file_name,
        )
    for key, kind in {**REQUIRED_KEYS, **OPTIONAL_KEYS}.items():
        if key not in record:
            if key in REQUIRED_KEYS:
                raise TemplateError(
                    f"built-in template file {file_name}: missing the key {key!r}",
                    code="invalid_builtin_template",
                    path=file_name,
                    key=key,
                )
            continue
        if not isinstance(record[key], kind):
            raise TemplateError(
                f"built-in template file {file_name}: {key!r} must be {_kind_name(kind)}, found "
                f"{type(record[key]).__name__}",
                code="invalid_builtin_template",
                path=file_name,
                key=key,
            )
    unknown = sorted(set(record) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        raise TemplateError(
            f"built-in template file {file_name}: unknown keys {unknown}",
            code="invalid_builtin_template",
            path=file_name,
        )


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)


def _record(name: str) -> dict[str, Any]:
    if not isinstance(name, str):
        raise UnknownTemplateError(f"a built-in template name must be a str, found {type(name).__name__}")
    records = _records()
    key = normalize_name(name)
    if key not in records:
        raise UnknownTemplateError(
            f"unknown built-in template {name!r}; known: {', '.join(list_templates())}",
            key=name,
        )
    return records[key]


# --- public lookups -----------------------------------------------------------------------------------


def list_templates() -> list[str]:
    """The names of every built-in template (the family ids), sorted."""
    return sorted(record["name"] for record in _records().values())


def get_template(name: str, *, v1: bool = False) -> dict[str, Any]:
    """A fresh deep copy of the family's response template (``qwen3.5`` may be spelled ``qwen3_5``). With
    ``v1=True``, its transformers form (what ``tokenizer.parse_response`` accepts; ``v1_form`` says what it
    loses), or ``NotV1Error`` when v1 cannot express the family."""
    return v1_form(name).template if v1 else copy.deepcopy(_record(name)["template"])


def _loader_lookup(name: str) -> dict[str, Any] | None:
    """``load_template``'s view of the built-ins: the template whose name is ``name`` exactly, dots and
    underscores alike (``qwen3.5`` or ``qwen3_5``); None when there is none."""
    normalized = name.replace(".", "_")
    for candidate in list_templates():
        if candidate == name or candidate.replace(".", "_") == normalized:
            return get_template(candidate)
    return None


set_builtin_lookup(_loader_lookup)  # the compiler below resolves built-in names through this, never an import


def v1_form(name: str) -> V1Form:
    """The family's template in transformers' v1 form, with ``losses``: what it parses differently from the
    built-in, one sentence each. ``NotV1Error`` (code ``not_v1_expressible``) says why when v1 cannot."""
    record = _record(name)
    return to_v1(record["name"], record["template"])


def template_info(name: str) -> dict[str, Any]:
    """The family's metadata: models, model_types, sources, prefill, chatparse_only, extensions, notes."""
    return copy.deepcopy({k: v for k, v in _record(name).items() if k != "template"})


# --- detection --------------------------------------------------------------------------------------


def detect_template(
    model_id: str | None = None,
    model_type: str | None = None,
    chat_template: str | None = None,
) -> str | None:
    """The built-in template that fits, or None. Evidence is tried from the most to the least specific:
    telltale tokens in the chat template, then the model id, then ``model_type``. A clue that fits
    several families equally well is no answer and falls through to the next clue."""
    for guess in (_by_chat_template(chat_template), _by_model_id(model_id), _by_model_type(model_type)):
        if guess is not None:
            return guess
    return None


def _best(scored: list[tuple[int, str]]) -> str | None:
    """The unique best-scoring name; a tie between different families is ambiguous."""
    if not scored:
        return None
    top = max(score for score, _ in scored)
    names = {name for score, name in scored if score == top}
    return names.pop() if len(names) == 1 else None


def _by_model_type(model_type: str | None) -> str | None:
    if not model_type:
        return None
    wanted = model_type.strip().lower()
    return _best(
        [(1, r["name"]) for r in _records().values() if wanted in (t.lower() for t in r["model_types"])]
    )


def _model_id_patterns(record: Mapping[str, Any]) -> list[str]:
    detect = record.get("detect", {})
    patterns = detect.get("model_id")
    if patterns is None:  # no explicit patterns: model names written as plain ids (no spaces) serve
        patterns = [
            m for m in record["models"] if isinstance(m, str) and m and not any(c.isspace() for c in m)
        ]
    return [p for p in patterns if isinstance(p, str) and p]


def _by_model_id(model_id: str | None) -> str | None:
    if not model_id:
        return None
    full = model_id.strip().lower()
    base = full.rsplit("/", 1)[-1]
    scored = []
    for record in _records().values():
        for pattern in _model_id_patterns(record):
            lowered = pattern.lower()
            target = full if "/" in lowered else base
            if fnmatch.fnmatchcase(target, lowered):
                scored.append((len(lowered.replace("*", "")), record["name"]))
    return _best(scored)


_ESCAPED_NEWLINE = re.compile(r"\\n")


def _marker_rules(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The chat-template clues of a family: one ``{"all": [...], "none": [...]}`` rule or a list of them
    (alternatives: templates of one family that share no telltale, such as LFM2's and LFM2.5's)."""
    rules = record.get("detect", {}).get("chat_template")
    if isinstance(rules, Mapping):
        rules = [rules]
    if not isinstance(rules, list):
        return []
    return [rule for rule in rules if isinstance(rule, Mapping) and rule.get("all")]


def _by_chat_template(chat_template: str | None) -> str | None:
    if not chat_template:
        return None
    # Jinja sources write newlines inside string literals as the two characters "\n".
    text = _ESCAPED_NEWLINE.sub("\n", chat_template)
    scored = []
    for record in _records().values():
        for rule in _marker_rules(record):
            if all(m in text for m in rule["all"]) and not any(m in text for m in rule.get("none", [])):
                scored.append((len(rule["all"]), record["name"]))
    return _best(scored)
