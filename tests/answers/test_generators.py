"""Generators: the real openai client over real HTTP against a local server, and replay."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chatparse.answers.generators import (
    Generation,
    OpenAIGenerator,
    Pricing,
    RecordingError,
    ReplayGenerator,
    generation_from_record,
)
from chatparse.answers.model import generation_schema
from chatparse.answers.pipeline import Block, answer_question, approximate_counter, build_request
from chatparse.answers.prompts import P1
from chatparse.answers.result import TokenUsage

from .conftest import EDU_LIMIT_BLOCK, dump


class FakeOpenAI:
    """A Chat Completions endpoint on 127.0.0.1 that replies from a queue and records requests."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, dict[str, Any]]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                owner.requests.append({"path": self.path, "body": json.loads(self.rfile.read(length))})
                owner.headers.append({key.lower(): value for key, value in self.headers.items()})
                status, body = (
                    owner.replies.pop(0) if owner.replies else (500, {"error": {"message": "empty"}})
                )
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reply(
        self, content: str | None, *, finish: str = "stop", refusal: str | None = None, usage: bool = True
    ) -> None:
        body: dict[str, Any] = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "finish_reason": finish,
                    "logprobs": None,
                }
            ],
        }
        if usage:
            body["usage"] = {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}
        self.replies.append((200, body))


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()
    fake.thread.join()


def make_generator(server: FakeOpenAI, **options: Any) -> OpenAIGenerator:
    return OpenAIGenerator("test-model", base_url=server.base_url, api_key="sk-test", timeout=10.0, **options)


def ask(generator: Any, evidence_block: str = EDU_LIMIT_BLOCK) -> Any:
    return answer_question(
        "교육비 한도는 얼마인가요?",
        [Block("edu#2", evidence_block, "교육비 지원 규정", frozenset({"staff"}))],
        user_scope={"staff"},
        generator=generator,
        counter=approximate_counter,
        budget=8000,
        prompt="P1",
        max_output_tokens=300,
    )


def test_structured_output_request_and_ok_answer(server: FakeOpenAI) -> None:
    server.reply(dump())
    generator = make_generator(server, pricing=Pricing(input_per_million=1.0, output_per_million=2.0), seed=7)
    result = ask(generator)
    assert result.kind == "ok" and result.status == "answered"
    assert result.tokens == TokenUsage(1000, 50)
    assert result.cost == pytest.approx((1000 * 1.0 + 50 * 2.0) / 1e6)
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    body = request["body"]
    assert body["model"] == "test-model"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "grounded_answer", "strict": True, "schema": generation_schema()},
    }
    assert body["max_completion_tokens"] == 300
    assert body["temperature"] == 0.0 and body["seed"] == 7
    assert [message["role"] for message in body["messages"]] == ["system", "user"]
    assert server.headers[0]["authorization"] == "Bearer sk-test"


def test_refusal_is_recognised(server: FakeOpenAI) -> None:
    server.reply(None, refusal="I'm sorry, I can't help with that.")
    result = ask(make_generator(server))
    assert result.kind == "refused"
    assert result.refusal == "I'm sorry, I can't help with that."
    assert result.errors == ()


def test_content_filter_is_a_refusal(server: FakeOpenAI) -> None:
    server.reply(None, finish="content_filter")
    assert ask(make_generator(server)).kind == "refused"


def test_length_finish_is_truncated_never_valid(server: FakeOpenAI) -> None:
    server.reply(dump(), finish="length")  # even a complete-looking object is not trusted
    result = ask(make_generator(server))
    assert result.kind == "invalid" and result.error_codes == ("truncated",)


def test_invalid_output_is_checked_locally(server: FakeOpenAI) -> None:
    server.reply(dump(citations=[{"source_id": "edu#2", "quote": "교육비 한도는 월 50만 원"}]))
    result = ask(make_generator(server))
    assert result.kind == "invalid" and result.error_codes == ("quote_not_found",)


def test_missing_usage_counts_zero(server: FakeOpenAI) -> None:
    server.reply(dump(), usage=False)
    assert ask(make_generator(server)).tokens == TokenUsage()


def test_http_error_is_a_failure_and_the_client_does_not_silently_retry(server: FakeOpenAI) -> None:
    server.replies.append((500, {"error": {"message": "boom", "type": "server_error"}}))
    result = ask(make_generator(server))
    assert result.kind == "failed" and result.failure == "http_500"
    assert len(server.requests) == 1


def test_bad_request_schema_rejection_is_a_failure(server: FakeOpenAI) -> None:
    server.replies.append((400, {"error": {"message": "Invalid schema", "type": "invalid_request_error"}}))
    result = ask(make_generator(server))
    assert result.kind == "failed" and result.failure == "http_400"


def test_connection_refused_is_a_failure() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    generator = OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", timeout=5.0)
    result = ask(generator)
    assert result.kind == "failed" and result.failure == "connection_error"


def test_replay_serves_recordings_in_order_and_fails_without_one() -> None:
    first, second = Generation(kind="ok", text="a"), Generation(kind="ok", text="b")
    generator = ReplayGenerator({"q1": [first, second]}, model="rec")
    req = build_request(P1, "q?", [], (), 100, "q1")
    assert [generator.generate(req).text for _ in range(3)] == ["a", "b", "b"]
    other = build_request(P1, "q?", [], (), 100, "q2")
    assert generator.generate(other) == Generation(kind="failed", failure="no_recording")
    assert generator.model == "rec"


def test_replay_from_records_validates_them() -> None:
    generator = ReplayGenerator.from_records(
        [{"key": "q1", "kind": "refused", "refusal": "no"}, {"key": "q1", "kind": "ok", "text": "{}"}]
    )
    assert generator.model == "replay"
    with pytest.raises(RecordingError):
        generation_from_record({"key": "q1", "kind": "maybe"})
    with pytest.raises(RecordingError):
        generation_from_record({"key": "q1", "kind": "ok", "text": 3})
    with pytest.raises(RecordingError):
        ReplayGenerator.from_records([{"kind": "ok", "text": "{}"}])
