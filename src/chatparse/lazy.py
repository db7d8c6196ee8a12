"""Imports made on first use (the pydantic-backed tool boundary, grounded answers, synthesis), safe when
many threads make that first use at once.

Python's import system locks each module on its own: two threads that import two submodules of a package
not imported yet can each hold what the other needs (``_DeadlockError``, ``ImportError: partially
initialized module``, ``KeyError`` of the package). ``load`` makes such imports one at a time: the
first-use imports of the parsing paths (the package's lazy names, tool typing, argument streaming, the
near-JSON reader) go through it. Module-level code never calls ``load`` (a thread holding a module's
import lock must never wait for this one).
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

_LOCK = threading.RLock()


def load(name: str) -> ModuleType:
    """The module ``name`` (``"chatparse.tools.schema"``), imported under one process-wide lock the first
    time; afterwards a dictionary lookup."""
    module = sys.modules.get(name)
    if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
        return module
    with _LOCK:
        return importlib.import_module(name)
