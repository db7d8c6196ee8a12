"""chatparse.integrations.transformers with real tokenizers (tests/integrations/tokenizers.py):

- token ids in every form transformers 5.24 takes parse exactly as ``tokenizer.parse_response`` parses them
  (templates transformers accepts: the bench templates and seeded random templates);
- ``TokenResponseParser`` fed the ids one or several at a time gives the one-shot message;
- every built-in family's corpus gives, through the token path, the message of chatparse's text path;
- bad input (ids outside the vocabulary, a tokenizer without the family's special tokens, a template the
  tokenizer's chat template contradicts, no template at all) is a named error.
"""

from __future__ import annotations

import json
import random
import warnings
import zlib
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chatparse
from chatparse.benchmark import TEMPLATES, make_output
from chatparse.errors import ChatparseError, PrefixRequiredError, TemplateError, UsageError
from chatparse.integrations.detokenize import TokenIdError, TokenInputError
from chatparse.integrations.tokenizer_config import MissingResponseTemplateError
from chatparse.integrations.transformers import (
    PROBE_MESSAGES,
    TokenizerMismatchError,
    TokenResponseParser,
    check_tokenizer,
    detect_template,
    parse_response,
    response_template,
    special_markers,
)
from tests.engine import differential as d
from tests.integrations import tokenizers as tk
from tests.templates.corpus_loader import case_id, corpus_cases, load_case
from tests.tokens import groupings, template_markers

pytest.importorskip("transformers.utils.chat_parsing")

RENDERED = Path(__file__).parents[1] / "templates" / "rendered"
CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
LLAMA3 = ("{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>"
          "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")
UNRENDERABLE = "{{ raise_exception('this template needs tools') }}"
QWEN3_PROMPT = "<|im_start|>user\nWeather in 서울?<|im_end|>\n<|im_start|>assistant\n"


def tokenizer_for(template: Any, texts: list[str], **kwargs: Any) -> Any:
    special, tags = template_markers(template)
    return tk.byte_level([*texts, *tk.SAMPLE], special=[*special, "<|pad|>"], added=tags, **kwargs)


def bench_output(kind: str, seed: int) -> str:
    return make_output(kind, 1200 + 300 * seed, every=350, seed=seed).replace("option", "선택지 🙂")


@cache
def bench(kind: str) -> tuple[Any, list[list[int]], list[int]]:
    """A tokenizer for a bench template (``response_template`` set), two generations as ids, a prefix."""
    outputs = [bench_output(kind, seed) for seed in (1, 2)]
    tokenizer = tokenizer_for(TEMPLATES[kind], outputs)
    tokenizer.response_template = TEMPLATES[kind]
    prefix = "<|im_start|>user\nhi<|im_end|>\n" + ("<|start|>assistant" if kind == "gpt-oss-regex" else
                                                  "<|im_start|>assistant\n")
    return tokenizer, [tk.encode(tokenizer, o) for o in outputs], tk.encode(tokenizer, prefix)


def padded(tokenizer: Any, rows: list[list[int]]) -> Any:
    pad = tokenizer.convert_tokens_to_ids("<|pad|>")
    width = max(map(len, rows))
    return np.array([row + [pad] * (width - len(row)) for row in rows], dtype=np.int64)


FORMS = ["list", "list, prefix ids", "numpy 1-D", "tuple", "batch", "batch, one prefix each", "numpy 2-D padded",
         "numpy 2-D, 2-D prefix", "prefix []", "texts", "tokenizer output"]


def form(name: str, tokenizer: Any, rows: list[list[int]], prefix: list[int]) -> tuple[Any, Any]:
    """(response, prefix) in one of the forms ``tokenizer.parse_response`` accepts."""
    text = tokenizer.decode(prefix)
    return {
        "list": lambda: (rows[0], text),
        "list, prefix ids": lambda: (rows[0], prefix),
        "numpy 1-D": lambda: (np.array(rows[0]), np.array(prefix)),
        "tuple": lambda: (tuple(rows[1]), tuple(prefix)),
        "batch": lambda: (rows, text),
        "batch, one prefix each": lambda: (rows, [text, ""]),
        "numpy 2-D padded": lambda: (padded(tokenizer, rows), prefix),
        "numpy 2-D, 2-D prefix": lambda: (padded(tokenizer, rows), np.array([prefix, prefix])),
        "prefix []": lambda: (rows[1], []),
        "texts": lambda: ([tokenizer.decode(r) for r in rows], text),
        "tokenizer output": lambda: (rows[0], tokenizer(text, add_special_tokens=False)),  # a BatchEncoding
    }[name]()


@pytest.mark.parametrize("how", FORMS)
@pytest.mark.parametrize("kind", sorted(TEMPLATES))
def test_token_ids_parse_as_transformers_parses_them(kind: str, how: str) -> None:
    tokenizer, rows, prefix = bench(kind)
    response, prefix_arg = form(how, tokenizer, rows, prefix)
    expected = tokenizer.parse_response(response, prefix=prefix_arg)
    assert parse_response(response, tokenizer=tokenizer, prefix=prefix_arg) == expected
    assert parse_response(response, TEMPLATES[kind], tokenizer=tokenizer, prefix=prefix_arg) == expected
    if how in ("batch", "numpy 2-D padded"):
        assert isinstance(expected, list) and len(expected) == 2 and expected[0].get("tool_calls")


def test_an_empty_batch_is_an_empty_list_as_in_transformers() -> None:
    tokenizer, _, _ = bench("qwen3-literal")
    assert parse_response([], tokenizer=tokenizer, prefix="") == tokenizer.parse_response([], prefix="") == []


@pytest.mark.parametrize("kind", sorted(TEMPLATES))
def test_streamed_ids_give_the_one_shot_message(kind: str) -> None:
    tokenizer, rows, prefix = bench(kind)
    expected = tokenizer.parse_response(rows[0], prefix=prefix)
    for name, groups in groupings(rows[0], seed=7).items():
        parser = TokenResponseParser(prefix=prefix, tokenizer=tokenizer)
        chunks = [e for g in groups for e in parser.feed(g) if e["type"] == "region_chunk"]
        message, events = parser.finalize()
        assert message == expected, name
        chunks += [e for e in events if e["type"] == "region_chunk"]
        assert not any("\ufffd" in e["text"] for e in chunks), f"{name}: a character was split"


def _outcome(call: Any) -> d.Outcome:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            message = call()
    except Exception as exc:  # the comparison is about which exceptions escape
        return d.Outcome(None, [], None, exc)
    return d.Outcome(None, [], json.loads(json.dumps(message, default=repr)), None)


RANDOM_SEEDS = range(60)


@cache
def random_cases() -> tuple[Any, list[tuple[dict[str, Any], str, str]]]:
    """Seeded random templates transformers accepts (tests/engine/differential.py) with outputs and
    prefixes, and one tokenizer holding every marker and tag they use."""
    cases = []
    for seed in RANDOM_SEEDS:
        rng = random.Random(seed)
        template = d.random_template(rng)
        cases.append((template, d.random_output(rng, template, rng.randint(5, 240)), d.random_prefix(rng, template)))
    markers = [template_markers(t) for t, _, _ in cases]
    special = sorted({m for s, _ in markers for m in s} | {"<|im_start|>", "<|start|>", "<|constrain|>"})
    tags = sorted({m for _, t in markers for m in t} - set(special))
    return tk.byte_level([o for _, o, _ in cases], special=special, added=tags), cases


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_templates_parse_token_ids_as_transformers_does(seed: int) -> None:
    tokenizer, cases = random_cases()
    template, output, prefix = cases[seed]
    ids, prefix_ids = tk.encode(tokenizer, output), tk.encode(tokenizer, prefix)
    ref = _outcome(lambda: tokenizer.parse_response(ids, template, prefix=prefix_ids))
    ours = _outcome(lambda: parse_response(ids, template, tokenizer=tokenizer, prefix=prefix_ids))
    assert d.compare(ours, ref) is None, d.compare(ours, ref)
    for name, groups in groupings(ids, seed).items():
        def streamed(groups: list[list[int]] = groups) -> dict[str, Any]:
            parser = TokenResponseParser(template, prefix_ids, tokenizer=tokenizer)
            for group in groups:
                parser.feed(group)
            return parser.finalize()[0]

        got = _outcome(streamed)
        assert d.compare(got, ours) is None, f"{name}: {d.compare(got, ours)}"


# --- the built-in families: token path == text path --------------------------------------------------

FAMILIES = sorted({family for family, _ in corpus_cases()})


@pytest.mark.parametrize("family", FAMILIES)
def test_builtin_corpus_token_path_equals_text_path(family: str) -> None:
    """Every corpus case of the family: its ids (one-shot, and fed in random groups of 1-8) give the message
    chatparse's text path gives for its text, with the family's tokenizer passing the checks. (One id per
    feed: the bench and random templates above, tests/integrations/test_detokenize.py.)"""
    tokenizer = tk.family_tokenizer(family)
    failures = []
    for path in [p for f, p in corpus_cases() if f == family]:
        case = load_case(path)
        options = {"tools": case.get("tools"), "on_malformed": case.get("options", {}).get("on_malformed", "raise")}
        ids, prefix_ids = tk.encode(tokenizer, case["output"]), tk.encode(tokenizer, case["prefix"])
        text_path = chatparse.parse_response(case["output"], family, prefix=case["prefix"], **options)
        if parse_response(ids, family, tokenizer=tokenizer, prefix=prefix_ids, **options) != text_path:
            failures.append(f"{path.stem}: one-shot")
        parser = TokenResponseParser(family, prefix_ids, tokenizer=tokenizer, **options)
        for group in groupings(ids, zlib.crc32(case_id(family, path).encode()))["random 1-8 #0"]:
            parser.feed(group)
        if parser.finalize()[0] != text_path:
            failures.append(f"{path.stem}: random groups of 1-8 ids")
    assert failures == []


def test_token_ids_take_the_finish_reason() -> None:
    """A Qwen 3.5 call the token limit cut between two parameters: ``finish_reason="length"`` reports it, as
    on the text path; without it the text-only rule keeps it (the model may have dropped its close)."""
    tokenizer = tk.family_tokenizer("qwen3_5")
    text = "Running it.\n\n<tool_call>\n<function=run>\n<parameter=command>\nls\n</parameter>\n"
    ids = tk.encode(tokenizer, text)
    for reason in (None, "stop", "length"):
        expected = chatparse.parse_response(text, "qwen3.5", prefix="", on_malformed="keep", finish_reason=reason)
        assert ("tool_calls" in expected) == (reason != "length")
        got = parse_response(ids, "qwen3.5", tokenizer=tokenizer, prefix="", on_malformed="keep", finish_reason=reason)
        assert got == expected
        parser = TokenResponseParser("qwen3.5", "", tokenizer=tokenizer, on_malformed="keep")
        for token in ids:
            parser.feed([token])
        assert parser.finalize(finish_reason=reason)[0] == expected


# --- does the tokenizer fit the template? ----------------------------------------------------------


def test_a_tokenizer_without_the_family_special_tokens_is_named() -> None:
    plain = tk.byte_level()
    ids = tk.encode(plain, "Hello<|im_end|>")
    with pytest.raises(TokenizerMismatchError) as info:
        parse_response(ids, "qwen3", tokenizer=plain, prefix=QWEN3_PROMPT)
    error = info.value
    assert error.code == "missing_special_tokens" and error.key == "start_anchor"
    assert {"<|im_start|>", "<|im_end|>"} <= set(error.details["markers"])
    assert "'<|im_end|>' (chatparse.end)" in str(error)
    assert isinstance(error, ValueError)
    with pytest.raises(TokenizerMismatchError):
        TokenResponseParser("qwen3", QWEN3_PROMPT, tokenizer=plain)
    message = parse_response(ids, "qwen3", tokenizer=plain, prefix=QWEN3_PROMPT, check=False)
    assert message == chatparse.parse_response("Hello<|im_end|>", "qwen3", prefix=QWEN3_PROMPT)


def test_one_alternative_of_a_delimiter_is_enough() -> None:
    # qwen3 ends a turn at <|im_end|> or <|endoftext|>; a tokenizer with only the first still fits.
    tokenizer = tk.byte_level(special=["<|im_start|>", "<|im_end|>"], added=["<think>", "</think>"])
    check_tokenizer(tokenizer, "qwen3")
    bare = tk.byte_level(special=["<|im_start|>"])
    with pytest.raises(TokenizerMismatchError, match=r"'<\|endoftext\|>', '<\|im_end\|>' \(chatparse.end\)"):
        check_tokenizer(bare, "qwen3")


def test_special_markers_are_the_special_token_shapes() -> None:
    assert special_markers("<|im_start|>assistant\n") == ["<|im_start|>"]
    assert special_markers("<｜tool▁call▁begin｜>function<｜tool▁sep｜>") == ["<｜tool▁call▁begin｜>",
                                                                             "<｜tool▁sep｜>"]
    assert special_markers("<|turn>model\n<turn|>[TOOL_CALLS][/INST]") == ["<|turn>", "<turn|>", "[TOOL_CALLS]",
                                                                          "[/INST]"]
    assert special_markers("<think> </tool_call> [a] <|x y|>") == []


def chatml_tokenizer(chat_template: str | None) -> Any:
    special, tags = template_markers("qwen3")
    tokenizer = tk.byte_level(special=[*special, "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
                              added=tags)
    tokenizer.chat_template = chat_template
    return tokenizer


def test_a_template_the_chat_template_contradicts_is_named() -> None:
    tokenizer = chatml_tokenizer(LLAMA3)
    with pytest.raises(TokenizerMismatchError) as info:
        parse_response([], "qwen3", tokenizer=tokenizer, prefix="")
    error = info.value
    assert error.code == "chat_template_mismatch" and error.key == "start_anchor"
    assert "'<|im_start|>assistant\\n'" in str(error) and "<|end_header_id|>" in str(error)
    check_tokenizer(tokenizer, "llama3_json")
    check_tokenizer(chatml_tokenizer(CHATML), "qwen3")
    check_tokenizer(chatml_tokenizer(None), "qwen3")  # no chat template: nothing to contradict
    parse_response([], "qwen3", tokenizer=tokenizer, prefix="", check=False)


def test_an_unrenderable_chat_template_is_read_for_the_anchor_tokens() -> None:
    check_tokenizer(chatml_tokenizer(UNRENDERABLE + "<|im_start|>"), "qwen3")
    with pytest.raises(TokenizerMismatchError, match=r"never writes '<\|im_start\|>'"):
        check_tokenizer(chatml_tokenizer(UNRENDERABLE + "<|start_header_id|>"), "qwen3")


def _rendered(family: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RENDERED / f"{family}.json").read_text(encoding="utf-8"))
    return data


RENDERED_FAMILIES = sorted(p.stem for p in RENDERED.glob("*.json"))


@pytest.mark.parametrize("family", RENDERED_FAMILIES)
def test_each_builtin_fits_its_published_chat_template(family: str) -> None:
    """The chat template renders the family's published generation prompt (tests/templates/rendered)."""
    prompt = _rendered(family)["renderings"]["prompt"]["text"]
    special, tags = template_markers(family)
    tokenizer = tk.byte_level(special=special, added=tags)
    tokenizer.chat_template = "{% raw %}" + prompt + "{% endraw %}"
    assert tokenizer.apply_chat_template(PROBE_MESSAGES, add_generation_prompt=True, tokenize=False) == prompt
    check_tokenizer(tokenizer, family)
    other = "llama3_json" if "<|im_start|>" in prompt else "qwen3"  # a family whose anchor is not there
    assert not chatparse.load_template(other).start_anchor.pattern.search(prompt)
    with pytest.raises(TokenizerMismatchError):
        check_tokenizer(tk.byte_level(special=[*special, *template_markers(other)[0]], added=tags,
                                      chat_template=tokenizer.chat_template), other)


# --- templates from tokenizers -------------------------------------------------------------------------


def test_a_tokenizer_without_a_template_says_what_to_do() -> None:
    tokenizer = tk.byte_level(name_or_path="Qwen/Qwen3-8B")
    with pytest.raises(MissingResponseTemplateError) as info:
        parse_response([1, 2], tokenizer=tokenizer, prefix="")
    error = info.value
    assert error.code == "no_response_template" and error.details["suggestion"] == "qwen3"
    assert "`chatparse templates install qwen3 MODEL_DIR`" in str(error)
    assert isinstance(error, AttributeError) and isinstance(error, TemplateError)
    with pytest.raises(AttributeError):  # what transformers raises for the same tokenizer
        tokenizer.parse_response([1, 2], prefix="")
    with pytest.raises(MissingResponseTemplateError, match="`chatparse templates list` shows"):
        TokenResponseParser(prefix="", tokenizer=tk.byte_level())


def test_response_template_reads_tokenizers_and_directories(tmp_path: Path) -> None:
    tokenizer, _, _ = bench("qwen3-literal")
    assert response_template(tokenizer) == TEMPLATES["qwen3-literal"]
    tokenizer.save_pretrained(tmp_path)
    assert response_template(tmp_path) == TEMPLATES["qwen3-literal"]
    assert response_template(str(tmp_path / "tokenizer_config.json")) == TEMPLATES["qwen3-literal"]


def test_a_model_directory_given_as_the_template_is_read(tmp_path: Path) -> None:
    tokenizer, rows, prefix = bench("qwen3-literal")
    tokenizer.save_pretrained(tmp_path / "with")
    expected = tokenizer.parse_response(rows[0], prefix=prefix)
    for template in (tmp_path / "with", str(tmp_path / "with" / "tokenizer_config.json")):
        assert parse_response(rows[0], template, tokenizer=tokenizer, prefix=prefix) == expected
    tk.byte_level().save_pretrained(tmp_path / "without")
    for template in (tmp_path / "without", str(tmp_path / "without" / "tokenizer_config.json")):
        with pytest.raises(MissingResponseTemplateError, match="has no 'response_template' key"):
            parse_response(rows[0], template, tokenizer=tokenizer, prefix=prefix)


def test_detect_template_from_a_tokenizer(tmp_path: Path) -> None:
    assert detect_template(tk.byte_level(name_or_path="Qwen/Qwen3-8B")) == "qwen3"
    assert detect_template(tk.byte_level(name_or_path="openai/gpt-oss-20b")) == "gpt_oss"
    assert detect_template(tk.byte_level()) is None
    for family in ("qwen3", "gpt_oss", "deepseek_r1"):
        rendered = _rendered(family)
        tokenizer = tk.byte_level(name_or_path="local-model")
        tokenizer.chat_template = "\n".join(rendered["literals"] + rendered["template_data_segments"]
                                             + rendered["identifiers"])
        assert detect_template(tokenizer) == family
    model = tmp_path / "my-finetune"
    tokenizer = tk.byte_level()
    tokenizer.save_pretrained(model)
    (model / "config.json").write_text(json.dumps({"model_type": "gpt_oss"}))
    tokenizer.name_or_path = str(model)
    assert detect_template(tokenizer) == "gpt_oss" == detect_template(model)


# --- bad input ------------------------------------------------------------------------------------


def test_ids_outside_the_vocabulary_are_named_where_they_are() -> None:
    tokenizer, rows, prefix = bench("qwen3-literal")
    size = len(tokenizer)
    cases = [
        (lambda: parse_response([*rows[0][:5], size], tokenizer=tokenizer, prefix=""), "response[5]"),
        (lambda: parse_response([rows[0], [1, -3]], tokenizer=tokenizer, prefix=""), "response[1][1]"),
        (lambda: parse_response(rows[0], tokenizer=tokenizer, prefix=[size + 9]), "prefix[0]"),
        (lambda: TokenResponseParser(prefix=[7, size], tokenizer=tokenizer), "prefix[1]"),
    ]
    for call, path in cases:
        with pytest.raises(TokenIdError) as info:
            call()
        assert info.value.code == "token_id_out_of_range" and info.value.path == path
    parser = TokenResponseParser(prefix=prefix, tokenizer=tokenizer)
    parser.feed(rows[0][:3])
    with pytest.raises(TokenIdError) as info:
        parser.feed([rows[0][3], 10**6])
    assert info.value.path == "ids[4]"
    # transformers drops such an id silently; chatparse names it (docs/transformers.md)
    assert tokenizer.decode([1, size + 5]) == tokenizer.decode([1])


@pytest.mark.parametrize(("response", "code"), [
    ([1, "a"], "bad_token_ids"), (["a", 1], "bad_token_ids"), (np.zeros((2, 2, 2), dtype=np.int64), "bad_token_ids"),
    ([1.5], "bad_token_ids"), ({"ids": [1]}, "bad_token_ids"),
])
def test_token_ids_of_the_wrong_shape_are_named(response: Any, code: str) -> None:
    tokenizer, _, _ = bench("qwen3-literal")
    with pytest.raises(TokenInputError) as info:
        parse_response(response, tokenizer=tokenizer, prefix="")
    assert info.value.code == code
    with pytest.raises(TokenInputError, match="found a batch"):
        TokenResponseParser(prefix="", tokenizer=tokenizer).feed([[1, 2]])


def test_prefix_rules() -> None:
    tokenizer, rows, _ = bench("qwen3-literal")
    with pytest.raises(PrefixRequiredError) as info:
        parse_response(rows[0], tokenizer=tokenizer)
    assert info.value.code == "prefix_required"
    with pytest.raises(PrefixRequiredError):
        TokenResponseParser(tokenizer=tokenizer)
    with pytest.raises(PrefixRequiredError) as info:
        parse_response(rows, tokenizer=tokenizer, prefix=["a", "b", "c"])
    assert info.value.code == "prefix_count_mismatch"
    with pytest.raises(ValueError):  # transformers refuses the same
        tokenizer.parse_response(rows, prefix=["a", "b", "c"])


def test_token_parser_streams_from_the_prefix_state() -> None:
    tokenizer, _, _ = bench("qwen3-literal")
    prefix = tk.encode(tokenizer, QWEN3_PROMPT + "<think>")
    parser = TokenResponseParser(prefix=prefix, tokenizer=tokenizer)
    assert [e["type"] for e in parser.initial_events] == ["region_open"]
    assert parser.template is chatparse.load_template(TEMPLATES["qwen3-literal"])
    ids = tk.encode(tokenizer, "서울 🙂</think>맑음<|im_end|>")
    events = [e for i in ids for e in parser.feed(i)]
    message, final = parser.finalize()
    assert message == {"role": "assistant", "thinking": "서울 🙂", "content": "맑음"}
    assert message == tokenizer.parse_response(ids, prefix=prefix)
    text = "".join(e["text"] for e in events + final if e["type"] == "region_chunk")
    assert text == "서울 🙂맑음"
    with pytest.raises(UsageError) as info:
        parser.feed([1])
    assert info.value.code == "parser_finalized"
    with pytest.raises(UsageError):
        parser.finalize()


def test_torch_tensors_parse_like_lists() -> None:
    torch = pytest.importorskip("torch")
    tokenizer, rows, prefix = bench("qwen3-literal")
    tensor = torch.tensor(rows[0])
    assert parse_response(tensor, tokenizer=tokenizer, prefix=torch.tensor(prefix)) == \
        tokenizer.parse_response(tensor, prefix=torch.tensor(prefix))
    batch = torch.tensor(padded(tokenizer, rows))
    assert parse_response(batch, tokenizer=tokenizer, prefix="") == tokenizer.parse_response(batch, prefix="")


def test_errors_are_chatparse_errors() -> None:
    for cls in (TokenIdError, TokenInputError, TokenizerMismatchError, MissingResponseTemplateError):
        assert issubclass(cls, ChatparseError)
