"""Shared fixtures for the grounded-answer tests: the seed's evidence and answer builders."""

from __future__ import annotations

import json
from typing import Any

import pytest

EDU_LIMIT_BLOCK = "교육비 한도는 분기당 30만 원이다. 분기 안에 쓰지 않은 한도는 다음 분기로 넘어가지 않는다."
LEAVE_BLOCK = "육아휴직을 시작하려는 날의 30일 전까지 인사팀에 신청서를 제출해야 한다."


@pytest.fixture
def evidence() -> dict[str, str]:
    return {"edu#2": EDU_LIMIT_BLOCK, "leave#2": LEAVE_BLOCK}


def dump(**fields: Any) -> str:
    """A complete answered output, with ``fields`` overriding keys (use ``None`` for JSON null)."""
    body: dict[str, Any] = {
        "status": "answered",
        "answer": "분기당 30만 원이다.",
        "citations": [{"source_id": "edu#2", "quote": "교육비 한도는 분기당 30만 원이다"}],
        "clarification": None,
    }
    body.update(fields)
    return json.dumps(body, ensure_ascii=False)
