"""The OpenAI Responses adapter against a local server that speaks POST /v1/responses
(JSON and server-sent events), through the official ``openai`` client: no network, no
API key."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

openai = pytest.importorskip("openai")

from histcore.exceptions import ModelBehaviorError  # noqa: E402
from histcore.runner.agent import Agent  # noqa: E402
from histcore.runner.models import OpenAIResponsesModel  # noqa: E402
from histcore.runner.run import Runner  # noqa: E402
from histcore.runner.run_config import RunConfig  # noqa: E402
from histcore.runner.stream_events import RawResponsesStreamEvent  # noqa: E402
from histcore.runner.tool import function_tool  # noqa: E402


class FakeResponsesServer:
    """A Responses endpoint on 127.0.0.1 that answers queued outputs in order."""

    def __init__(self) -> None:
        self.queue: deque[list[dict[str, Any]] | int | str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path != "/v1/responses":
                    return self._send(404, {"error": {"message": "not found"}})
                answer = server.queue.popleft()
                if isinstance(answer, int):
                    return self._send(answer, {"error": {"message": "server says no"}})
                response_id = f"resp_{len(server.requests)}"
                if answer == "fail":
                    return self._stream(
                        [
                            _event(
                                "response.failed",
                                0,
                                response=_response(
                                    response_id,
                                    [],
                                    status="failed",
                                    error={"code": "server_error", "message": "overloaded"},
                                ),
                            )
                        ]
                    )
                assert isinstance(answer, list)
                if body.get("stream"):
                    return self._stream(_sse_events(response_id, answer))
                return self._send(200, _response(response_id, answer))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, events: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for event in events:
                    chunk = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                    self.wfile.write(chunk.encode())
                    self.wfile.flush()
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


def _response(
    response_id: str, output: list[dict[str, Any]], status: str = "completed", **extra: Any
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1_700_000_000,
        "model": "test-model",
        "status": status,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 12,
            "output_tokens": 5,
            "total_tokens": 17,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
        **extra,
    }


def _event(kind: str, sequence: int, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "sequence_number": sequence, **fields}


def _sse_events(response_id: str, output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    events = [_event("response.created", 0, response=_response(response_id, [], "in_progress"))]
    for index, item in enumerate(output):
        events.append(
            _event("response.output_item.added", len(events), output_index=index, item=item)
        )
        if item["type"] == "message":
            text = item["content"][0]["text"]
            for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                events.append(
                    _event(
                        "response.output_text.delta",
                        len(events),
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        delta=piece,
                        logprobs=[],
                    )
                )
        events.append(
            _event("response.output_item.done", len(events), output_index=index, item=item)
        )
    events.append(
        _event("response.completed", len(events), response=_response(response_id, output))
    )
    return events


def api_message(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def api_function_call(name: str, arguments: str, call_id: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


@pytest.fixture
def server() -> Iterator[FakeResponsesServer]:
    fake = FakeResponsesServer()
    fake.thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


def model_for(server: FakeResponsesServer, **settings: Any) -> OpenAIResponsesModel:
    client = openai.AsyncOpenAI(api_key="test-key", base_url=server.base_url, max_retries=0)
    return OpenAIResponsesModel("test-model", client=client, settings=settings)


@function_tool
def get_rate(currency: str) -> str:
    """Exchange rate of a currency to EUR."""
    return f"1 {currency} = 0.9 EUR"


@pytest.mark.parametrize("mode", ["run", "streamed"])
async def test_a_tool_turn_then_an_answer(server: FakeResponsesServer, mode: str) -> None:
    server.queue.extend(
        [
            [api_function_call("get_rate", '{"currency": "USD"}', "call_1")],
            [api_message("One dollar is 0.9 euro.")],
        ]
    )
    agent = Agent(
        "fx",
        instructions="Answer briefly.",
        model=model_for(server, temperature=0.2),
        tools=[get_rate],
    )
    if mode == "run":
        result = await Runner.run(agent, "How much is a dollar?")
        raw_types: list[str] = []
    else:
        streamed = Runner.run_streamed(agent, "How much is a dollar?")
        raw_types = [
            event.data["type"]
            async for event in streamed.stream_events()
            if isinstance(event, RawResponsesStreamEvent)
        ]
        result = streamed  # type: ignore[assignment]
    assert result.final_output == "One dollar is 0.9 euro."
    assert [r.response_id for r in result.raw_responses] == ["resp_1", "resp_2"]
    assert result.usage.total_tokens == 34

    first, second = server.requests
    assert first["model"] == "test-model"
    assert first["temperature"] == 0.2
    assert first["instructions"] == "Answer briefly."
    assert first["input"] == [{"role": "user", "content": "How much is a dollar?"}]
    assert first["tools"] == [get_rate.to_model_tool()]
    assert bool(first.get("stream")) is (mode == "streamed")
    assert second["input"][1:] == [
        api_function_call("get_rate", '{"currency": "USD"}', "call_1"),
        {"type": "function_call_output", "call_id": "call_1", "output": "1 USD = 0.9 EUR"},
    ]
    assert server.headers[0]["authorization"] == "Bearer test-key"
    if mode == "streamed":
        assert raw_types.count("response.output_text.delta") == 2
        assert raw_types.count("response.completed") == 2
        assert raw_types[0] == "response.created"


async def test_output_items_come_back_as_plain_dicts(server: FakeResponsesServer) -> None:
    server.queue.append([api_message("hi", "msg_x")])
    response = await model_for(server).get_response(
        [{"role": "user", "content": "hello"}], instructions=None, tools=[]
    )
    assert response.output == [api_message("hi", "msg_x")]
    assert type(response.output[0]) is dict
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 5)
    request = server.requests[0]
    assert "instructions" not in request
    assert "tools" not in request


async def test_a_failed_stream_is_a_model_behavior_error(server: FakeResponsesServer) -> None:
    server.queue.append("fail")
    result = Runner.run_streamed(Agent("x", model=model_for(server)), "hi")
    with pytest.raises(ModelBehaviorError, match=r"response.failed: overloaded"):
        async for _ in result.stream_events():
            pass


@pytest.mark.parametrize("mode", ["run", "streamed"])
async def test_http_errors_propagate_as_openai_errors(
    server: FakeResponsesServer, mode: str
) -> None:
    server.queue.append(400)
    agent = Agent("x", model=model_for(server))
    with pytest.raises(openai.BadRequestError, match="server says no"):  # noqa: PT012
        if mode == "run":
            await Runner.run(agent, "hi")
        else:
            async for _ in Runner.run_streamed(agent, "hi").stream_events():
                pass


async def test_a_model_name_uses_the_default_client(
    server: FakeResponsesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.queue.append([api_message("named")])
    result = await Runner.run(Agent("x"), "hi", run_config=RunConfig(model="named-model"))
    assert result.final_output == "named"
    assert server.requests[0]["model"] == "named-model"
    assert server.headers[0]["authorization"] == "Bearer env-key"


def test_model_name_must_be_given() -> None:
    with pytest.raises(ValueError, match="non-empty model name"):
        OpenAIResponsesModel("")
