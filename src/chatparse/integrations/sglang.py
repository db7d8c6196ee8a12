"""The SGLang plugin: serve any chatparse template through SGLang's tool-call and reasoning parser interfaces
(docs/sglang.md).

``CHATPARSE_TEMPLATE=NAME python -m sglang.launch_server --model-path MODEL --tool-call-parser chatparse
--reasoning-parser chatparse``. SGLang runs ``register`` from the ``sglang.srt.plugins`` entry point in every
process; it adds the ``chatparse`` detectors to SGLang's parser maps. Importing this module does not import
SGLang; the detectors (in ``sglang_detectors``) load on first use.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from chatparse.integrations.serving import PARSER_NAME

NAME = PARSER_NAME  # the --tool-call-parser / --reasoning-parser name
ENTRY_POINT_GROUP = "sglang.srt.plugins"  # SGLang's group of general plugins (load_plugins)
ENTRY_POINT = "chatparse.integrations.sglang:register"
SUPPORTED_SGLANG = "0.5.23"

_CLASSES = ("ChatparseReasoningDetector", "ChatparseToolDetector")


def _detectors() -> Any:
    if importlib.util.find_spec("sglang") is None:
        raise ImportError(f"chatparse.integrations.sglang needs SGLang {SUPPORTED_SGLANG} "
                          f"(pip install 'sglang=={SUPPORTED_SGLANG}'); it is not installed")
    from chatparse.integrations import sglang_detectors

    return sglang_detectors


def register() -> None:
    """Add the ``chatparse`` tool-call and reasoning detectors to SGLang's parser maps (idempotent). The
    ``sglang.srt.plugins`` entry point; call it yourself when SGLang runs inside your process."""
    _detectors().register()


def __getattr__(name: str) -> Any:
    if name in _CLASSES:
        return getattr(_detectors(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ENTRY_POINT", "ENTRY_POINT_GROUP", "NAME", "SUPPORTED_SGLANG", "register", *_CLASSES]
