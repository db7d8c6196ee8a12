"""Degenerate outputs (a model looping on whitespace or one character) inside every region of every
built-in stay within the engine's regex budgets: the delimiter patterns scan in linear time."""

from __future__ import annotations

import pytest

import chatparse
from chatparse.errors import OutputError
from chatparse.templates import get_template, list_templates
from tests.templates.test_registry import PART_A

# Text that leaves the parser inside (or at the edge of) each kind of region the part-A formats have.
OPENERS = [
    "", "<think>", "[THINK]", "Here is my thought process:", "<tool_call>", "<tool_call>x", "<tool_call>\n<function=",
    "<tool_call>\n<function=f>\n<parameter=a>\n", "<function=", "<tool_call>x<arg_key>k</arg_key><arg_value>",
    '<tool_call>{"name": "f", "arguments": {}}', "<｜tool▁call▁begin｜>",
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}",
    "<｜tool▁call▁begin｜>f<｜tool▁sep｜>{}", '<｜DSML｜invoke name="f">', '<｜DSML｜invoke name="f"><｜DSML｜parameter name="',
    "<|python_tag|>", '{"name"', "[f(", "<|python_start|>[f(a=1)]", "[TOOL_CALLS]", "[TOOL_CALLS]f[ARGS]{}",
    "[TOOL_CALLS][]", "<|tool_call_begin|>", "<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}",
    "<|tool_call|>[]", "<function_call> {}", "<|action_start|><|plugin|>{}", "<tool_calls>[]",
]  # fmt: skip
# Part B: per family (the generic list above is written for part A's formats), the text that leaves the
# parser inside each of its regions. "" (the implicit content region) is always included.
MM3 = "]<]minimax[>["  # MiniMax M3's namespace token before each element
OPENERS_B: dict[str, list[str]] = {
    "minimax_m1": ["<think>", "<tool_calls>", '<tool_calls>\n{"name": "f", "arguments": {}}'],
    "minimax_m2": ["<think>", "<minimax:tool_call>", '<minimax:tool_call><invoke name="f">',
                   '<invoke name="f"><parameter name="a">', '<invoke name="f"></invoke>'],
    "phi4_mini": ["functools", "functools[", "functools[]"],
    "xlam": ["<think>", "<think></think>", "[", "[{", "```json", "```json\n[", "<tool_call>", "<tool_call>[{}]",
             "[TOOL_CALLS]", "[TOOL_CALLS][]"],
    "hunyuan_a13b": ["<think>", "<answer>", "<answer><tool_calls>", "<tool_calls>[]"],
    "gpt_oss": ["<|channel|>analysis<|message|>", "<|channel|>final<|message|>", "<|channel|>commentary",
                "<|channel|>commentary to=functions.f", "<|channel|>commentary to=functions.f <|constrain|>json",
                "<|channel|>commentary to=functions.f<|message|>", " to=functions.f", " to=functions.f<|channel|>commentary",
                "<|end|>"],
    "seed_oss": ["<seed:think>", "<seed:tool_call>", "<seed:tool_call><function=f>",
                 "<seed:tool_call><function=f><parameter=a>", "<seed:tool_call><function=f></function>"],
    "step3": ["<think>", "<｜tool_calls_begin｜>", "<｜tool_call_begin｜>function<｜tool_sep｜>",
              '<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="f">',
              '<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="f"><steptml:parameter name="a">',
              '<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="f"></steptml:invoke>'],
    "longcat": ["<longcat_tool_call>", '<longcat_tool_call>{"name": "f", "arguments": {}}'],
    "ernie45": ["<think>", "x", "</think>", "</think><response>", "</think><tool_call>", "</think><tool_call>{}"],
    "olmo3": ["<think>", "<function_calls>", "<function_calls>f()"],
    "cohere_command": ["<|START_THINKING|>", "<|START_RESPONSE|>", "<|START_ACTION|>", "<|START_ACTION|>[]"],
    "gemma4": ["<|channel>thought", "<|tool_call>call:f", "<|tool_call>call:f{}"],
    "functiongemma": ["<start_function_call>call:f", "<start_function_call>call:f{}"],
    "smollm3": ["<think>", "<tool_call>", "<tool_call>{}"],
    "lfm2": ["<think>", "<|tool_call_start|>", "<|tool_call_start|>[]"],
    "nemotron_json": ["<think>", "<TOOLCALL>", "<TOOLCALL>[]"],
    "apertus": ["<|inner_prefix|>", "<|tools_prefix|>", "<|tools_prefix|>[]"],
    "functionary_v3_1": ["<function=f>", "<function=f>{}"],
    # issue 12's families
    "deepseek_v4": ["<think>", "<｜DSML｜tool_calls>", '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="f">',
                    '<｜DSML｜invoke name="f"><｜DSML｜parameter name="',
                    '<｜DSML｜invoke name="f"><｜DSML｜parameter name="a" string="true">', '<｜DSML｜invoke name="f">{'],
    "deepseek_v4_1": ["<think>", "<｜DSML｜ calls>", '<｜DSML｜ calls>\n<｜DSML｜ invoke name="f">',
                      '<｜DSML｜ invoke name="f"><｜DSML｜ parameter name="',
                      '<｜DSML｜ invoke name="f"><｜DSML｜ parameter name="a" string="true">'],
    "kimi_k3": ["<|open|>think<|sep|>", "<|open|>response<|sep|>", "<|open|>tools<|sep|>",
                '<|open|>call tool="f" index="1"<|sep|>',
                '<|open|>call tool="f" index="1"<|sep|><|open|>argument key="a" type="string"<|sep|>',
                '<|open|>call tool="f" index="1"<|sep|><|open|>json type="object"<|sep|>{'],
    "k2_horizon": ["<ifm|think>", "<ifm|think_fast>", "<ifm|think_faster>", "<ifm|tool_calls>", "<ifm|tool_call>f",
                   "<ifm|tool_call>f<ifm|arg_key>a</ifm|arg_key><ifm|arg_value>",
                   '<ifm|tool_call>{"name": "f", "arguments": {', "<ifm|tool_call>f<ifm|arg_key>a</ifm|arg_key><ifm|arg_type>"],
    "hunyuan_hy3": ["<think:opensource>", "<tool_calls:opensource>", "<tool_call:opensource>f<tool_sep:opensource>",
                    "<tool_call:opensource>f<tool_sep:opensource><arg_key:opensource>a</arg_key:opensource>"
                    "<arg_value:opensource>", "<tool_call>f<tool_sep>"],
    "hunyuan_hy4": ["<think:opensource>", "<tool_calls:opensource>", "<tool_call:opensource>f",
                    "<tool_call:opensource>f<arg_key:opensource>a</arg_key:opensource><arg_value:opensource>",
                    "<tool_call>f"],
    "gigachat3": ["function call<|role_sep|>", "function call<|role_sep|>\n{", "<|function_call|>", "<|message_sep|>"],
    "gigachat3_1": ["<|function_call|>", '<|function_call|>{"name": "f", "arguments": {', "<|message_sep|>"],
    "gigachat3_5": ["<think>", "<｜GCML｜tool_calls>", '<｜GCML｜invoke name="f">',
                    '<｜GCML｜invoke name="f">\n<｜GCML｜parameter name="a" string="true">'],
    "minimax_m3": [MM3 + "<tool_call>", MM3 + '<invoke name="f">', MM3 + '<invoke name="f">' + MM3 + "<a>",
                   MM3 + '<invoke name="f">' + MM3 + "<a>" + MM3 + "<item>", "<mm:think>"],
    "minicpm5": ["<think>", '<function name="f">', '<function name="f"><param name="a">',
                 '<function name="f"><param name="a"><![CDATA['],
    "poolside_v1": ["<think>", "<tool_call>", "<tool_call>f", "<tool_call>f<arg_key>k</arg_key><arg_value>"],
    "ling3": ["<think>", "<tool_call>", "<tool_call>f\n", "<tool_call>f\n<arg_key>k</arg_key>\n<arg_value>"],
    "mimo": ["<think>", "<tool_call>", "<tool_call><function=f>", "<tool_call><function=f><parameter=a>"],
    "minicpmv": ["<think>", "<tool_call>\n<function=f>\n", "<tool_call>\n<function=f>\n<parameter=a>\n", "x\\"],
    "dots": ["<think>", "<dots_function_call>", '<dots_function_call>\n<invoke name="f">',
             '<dots_function_call>\n<invoke name="f">\n<parameter name="a">', "<dots_function_call>{"],
    "inkling": ["<|content_thinking|>", "<|message_model|><|content_text|>", "f<|content_invoke_tool_json|>",
                '<|message_model|>f<|content_invoke_tool_json|>{"name": "f", "args": {'],
    "plamo3": ["<|plamo:begin_think:plamo|>", "<|plamo:begin_tool_requests:plamo|>",
               "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>f"
               "<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"],
    "muse_spark": [" to=self<|message|>", "<|message|>", " to=user<|message|>", " to=commentary<|message|>",
                   " to=f<|message|>", ' to=f<|message|><atem:function_calls>\n<atem:invoke name="f">\n'
                   '<atem:parameter name="a">', " to=developer<|message|>"],
    # issue 29's families
    "gemma2": ["x"],
    "firefunction_v2": ["functools", "functools[", 'functools[{"name": "f", "arguments": "{'],
    "command_r_plus": ["Action:", "Action: ```json", "Action: ```json\n[", "Action: ```json\n[]"],
    "functionary_v3_2": ["all\n", "f\n", "f\n{", ">>>", ">>>f\n{}"],
    "apriel": ["Here are my reasoning steps:", "[BEGIN FINAL RESPONSE]", "<tool_calls>", "<tool_calls>[]"],
    "llm_jp_4_1": ["<|channel|> analysis<|message|>", "<|channel|> final<|message|>",
                   " to=functions.f<|channel|> commentary <|constrain|> json<|message|>", "<|end|><|start|> assistant"],
    "muse_glimmer": [" to=self<|message|>", "<|message|>", " to=user<|message|>", " to=f<|message|>",
                     ' to=f<|message|><atem:function_calls>\n<atem:invoke name="f">\n<atem:parameter name="a">'],
}
FILLERS = [" ", "\n"]  # the realistic degenerate loops
LENGTH = 2500
CHUNK = 48


def openers_for(name: str) -> list[str]:
    return OPENERS if name in PART_A else ["", *OPENERS_B[name.replace(".", "_")]]


def test_every_built_in_has_openers() -> None:
    assert {n.replace(".", "_") for n in list_templates()} - {n.replace(".", "_") for n in PART_A} <= set(OPENERS_B)


@pytest.mark.parametrize("name", list_templates())
def test_long_degenerate_runs_stay_within_the_regex_budget(name: str) -> None:
    template = get_template(name)
    for opener in openers_for(name):
        for filler in FILLERS:
            text = opener + filler * LENGTH
            parser = chatparse.ResponseParser(template, "", on_malformed="keep")
            try:
                for i in range(0, len(text), CHUNK):
                    parser.feed(text[i : i + CHUNK])
                parser.finalize()
            except OutputError:
                pass  # e.g. a transform that finds no name: the output's fault, not the scan's
