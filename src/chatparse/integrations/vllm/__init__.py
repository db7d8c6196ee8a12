"""The vLLM plugin: serve any chatparse template through vLLM's parser interfaces (docs/vllm.md).

``vllm serve MODEL --tool-parser-plugin chatparse.integrations.vllm.plugin --tool-call-parser chatparse
--reasoning-parser-plugin chatparse.integrations.vllm.plugin --reasoning-parser chatparse
--enable-auto-tool-choice``. Importing this module does not import vLLM; the classes (in ``parsers``) load on
first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chatparse.integrations.serving import PARSER_NAME

NAME = PARSER_NAME  # the --tool-call-parser / --reasoning-parser name
PLUGIN_MODULE = "chatparse.integrations.vllm.plugin"  # what --tool-parser-plugin takes (a module or a file)
PLUGIN_FILE = str(Path(__file__).with_name("plugin.py"))
SUPPORTED_VLLM = "0.33"

_CLASSES = ("ChatparseParser", "ChatparseReasoningParser", "ChatparseToolParser", "register")


def __getattr__(name: str) -> Any:
    if name in _CLASSES:
        try:
            from chatparse.integrations.vllm import parsers
        except ModuleNotFoundError as error:
            if error.name is None or error.name.split(".")[0] != "vllm":
                raise
            raise ImportError(f"chatparse.integrations.vllm.{name} needs vLLM {SUPPORTED_VLLM} "
                              f"(pip install 'vllm=={SUPPORTED_VLLM}.*'); it is not installed") from error
        return getattr(parsers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["NAME", "PLUGIN_FILE", "PLUGIN_MODULE", "SUPPORTED_VLLM", *_CLASSES]
