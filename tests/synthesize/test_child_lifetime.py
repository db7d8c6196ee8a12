"""The render child never outlives ``chatparse templates synthesize``: a real console script, a chat template
that loops in its first render, and a real signal to the parent (SIGTERM left the child looping on)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process parents from /proc")

LOOPING = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{{ messages }}"


def _state(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) of ``pid``, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    state = _state(pid)
    return state is not None and state[0] not in "ZX"  # a zombie has ended (its new parent may never reap it)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (state := _state(int(entry.name))) is not None and state[1] == pid:
            found.append(int(entry.name))
    return found


def _wait(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _start(directory: Path) -> subprocess.Popen[bytes]:
    """The CLI synthesizing a looping template."""
    directory.mkdir()
    (directory / "chat_template.jinja").write_text(LOOPING, encoding="utf-8")
    script = shutil.which("chatparse", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "chatparse"]
    return subprocess.Popen([*command, "templates", "synthesize", str(directory), "--messages", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _child_of(proc: subprocess.Popen[bytes]) -> int:
    """The render child of ``proc``, once it runs."""
    children: list[int] = []
    if not _wait(lambda: bool(children.extend(_children(proc.pid)) or children), 60):
        proc.kill()
        pytest.fail(f"no render child appeared: {proc.communicate(timeout=10)}")
    return children[0]


# SIGKILL ends the parent as SIGTERM does (no handler runs in either): the same parent-death signal covers it.
SIGNALS = (signal.SIGTERM, signal.SIGINT)


def test_the_render_child_ends_with_its_parent_on_sigterm_and_sigint(tmp_path: Path) -> None:
    """Two real runs side by side (each pays the transformers import once), one signal each."""
    procs = [_start(tmp_path / sig.name) for sig in SIGNALS]
    children: list[int] = []
    try:
        children = [_child_of(proc) for proc in procs]
        time.sleep(0.5)  # let each child reach the looping render (it compiles first)
        for proc, child, sig in zip(procs, children, SIGNALS, strict=True):
            assert _alive(child)
            os.kill(proc.pid, sig)
        for proc, child, sig in zip(procs, children, SIGNALS, strict=True):
            returncode = proc.wait(timeout=30)
            assert _wait(lambda: not _alive(child), 10), f"the render child outlived its parent ({sig.name})"  # noqa: B023
            if sig == signal.SIGINT:
                assert returncode == 130
                assert b"Traceback" not in proc.stderr.read()  # type: ignore[union-attr]
            else:
                assert returncode == -sig
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=10)
        for child in children:
            if _alive(child):
                os.kill(child, signal.SIGKILL)
