"""The chat templates written for these tests (``templates/*.jinja``, in the style of each family, from the
format facts), the special tokens their tokenizers pass, the built-in each is compared with, and what the
synthesis must infer from each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).parent / "templates"

DS = {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>", "pad_token": "<｜▁pad▁｜>"}

# name -> (special tokens as the family's tokenizer passes them, built-in family, expected facts)
FAMILIES: dict[str, dict[str, Any]] = {
    "qwen3": {
        "tokens": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, "builtin": "qwen3",
        "anchors": ["<|im_start|>assistant\n"], "reasoning": ("<think>", "</think>"), "syntax": "json-object",
        "end": ["<|im_end|>"], "next_turn": ["<|im_start|>"],
        "prefill": {"default": "", "enable_thinking=False": "<think>\n\n</think>\n\n"},
    },
    "qwen3_5": {
        "tokens": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, "builtin": "qwen3.5",
        "anchors": ["<|im_start|>assistant\n"], "reasoning": ("<think>", "</think>"), "syntax": "xml-params",
        "end": ["<|im_end|>"], "next_turn": ["<|im_start|>"],
        "prefill": {"default": "<think>\n", "enable_thinking=False": "<think>\n\n</think>\n\n"},
    },
    "deepseek_v3_1": {
        "tokens": DS, "builtin": "deepseek_v3.1",
        "anchors": ["<｜Assistant｜>", "<｜tool▁output▁end｜>"], "reasoning": ("<think>", "</think>"),
        "syntax": "name-json", "end": ["<｜end▁of▁sentence｜>"], "next_turn": ["<｜User｜>", "<｜tool▁output▁begin｜>"],
        "prefill": {"default": "</think>", "thinking=True": "<think>"},
    },
    "deepseek_v3_2": {
        "tokens": DS, "builtin": "deepseek_v3.2",
        "anchors": ["<｜Assistant｜>", "</function_results>\n\n"], "reasoning": ("<think>", "</think>"),
        "syntax": "xml-params", "end": ["<｜end▁of▁sentence｜>"], "next_turn": ["<｜User｜>", "<function_results>"],
        "prefill": {"default": "<think></think>", "thinking=True": "<think>", "enable_thinking=True": "<think>"},
    },
    "gpt_oss": {
        "tokens": {"bos_token": "<|startoftext|>", "eos_token": "<|return|>", "pad_token": "<|endoftext|>"},
        "builtin": "gpt_oss", "anchors": ["<|start|>assistant"],
        "reasoning": ("<|channel|>analysis<|message|>", "<|end|>"), "syntax": "name-json",
        "end": ["<|return|>"], "next_turn": ["<|start|>user", "<|start|>functions."], "prefill": {"default": ""},
    },
    "llama3_json": {
        "tokens": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
                   "pad_token": "<|finetune_right_pad_id|>", "end_tokens": ["<|eom_id|>", "<|end_of_text|>"]},
        "builtin": "llama3_json", "anchors": ["<|start_header_id|>assistant<|end_header_id|>\n\n"],
        "reasoning": None, "syntax": "json-object", "end": ["<|eot_id|>"], "next_turn": ["<|start_header_id|>"],
        "prefill": {"default": ""},
    },
    "mistral": {
        "tokens": {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"}, "builtin": "mistral_v11",
        "anchors": ["[/INST]", "[/TOOL_RESULTS]"], "reasoning": ("[THINK]", "[/THINK]"), "syntax": "name-json",
        "end": ["</s>"], "next_turn": ["[INST]", "[TOOL_RESULTS]"], "prefill": {"default": ""},
    },
    "glm": {
        "tokens": {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}, "builtin": "glm47",
        "anchors": ["<|assistant|>"], "reasoning": ("<think>", "</think>"), "syntax": "xml-params",
        "end": ["<|user|>", "<|observation|>"], "next_turn": ["<|system|>"],
        "prefill": {"default": "<think>", "enable_thinking=False": "</think>"},
    },
    "kimi_k2": {
        "tokens": {"bos_token": "[BOS]", "eos_token": "[EOS]"}, "builtin": "kimi_k2",
        "anchors": ["<|im_assistant|>assistant<|im_middle|>"], "reasoning": ("<think>", "</think>"),
        "syntax": "name-json", "end": ["<|im_end|>"], "next_turn": ["<|im_user|>", "<|im_system|>"],
        "prefill": {"default": ""},
    },
    "gemma4": {
        "tokens": {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"}, "builtin": "gemma4",
        "anchors": ["<|turn>model\n", "<tool_response|>"], "reasoning": ("<|channel>thought", "<channel|>"),
        "syntax": "bare-key-object", "end": ["<turn|>", "<|tool_response>"], "next_turn": ["<|turn>"],
        "prefill": {"default": "<|channel>thought\n<channel|>", "enable_thinking=True": ""},
    },
}


def source(name: str) -> str:
    return (TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8")
