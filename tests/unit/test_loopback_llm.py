"""The loopback LLM server, exercised with the real `openai` client over HTTP."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.loopback_llm import loopback_llm_server

openai = pytest.importorskip("openai")

TITLE_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "words": {"type": "integer"}},
    "required": ["title", "words"],
}

llm_server = pytest.fixture(loopback_llm_server)


def _client(server, **options) -> openai.OpenAI:
    options = {"max_retries": 0, "timeout": 5.0, **options}
    return openai.OpenAI(base_url=server.base_url, api_key="test-key", **options)


def _messages(role: str, role_input: dict) -> list[dict]:
    fenced = f"```json\n{json.dumps(role_input)}\n```"
    return [
        {"role": "system", "content": f"role: {role}\nYou name things."},
        {"role": "user", "content": f"Input:\n{fenced}"},
    ]


def _ask_title(client, text: str = "graph databases", response_format: str = "json_schema"):
    formats = {
        "json_schema": {
            "type": "json_schema",
            "json_schema": {"name": "title", "schema": TITLE_SCHEMA, "strict": False},
        },
        "json_object": {"type": "json_object"},
    }
    return client.chat.completions.create(
        model="loopback-model",
        messages=_messages("title", {"text": text}),
        response_format=formats[response_format],
    )


def _title_handler(role_input: dict, body: dict) -> dict:
    return {"title": role_input["text"].title(), "words": len(role_input["text"].split())}


def test_role_handler_round_trip(llm_server):
    llm_server.handle("title", _title_handler)
    reply = _ask_title(_client(llm_server))
    assert json.loads(reply.choices[0].message.content) == {"title": "Graph Databases", "words": 2}
    assert reply.model == "loopback-model"
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    (record,) = llm_server.requests
    assert record["role"] == "title"
    assert record["headers"]["authorization"] == "Bearer test-key"
    assert record["body"]["response_format"]["json_schema"]["name"] == "title"


def test_role_known_from_system_line_without_response_format(llm_server):
    llm_server.handle("title", _title_handler)
    reply = _ask_title(_client(llm_server), response_format="json_object")
    assert json.loads(reply.choices[0].message.content)["title"] == "Graph Databases"


def test_rate_limit_is_retried_by_the_client(llm_server):
    llm_server.handle("title", _title_handler)
    llm_server.inject("rate_limit", retry_after=1)
    reply = _ask_title(_client(llm_server, max_retries=2))
    assert json.loads(reply.choices[0].message.content)["words"] == 2
    assert [record["fault"] for record in llm_server.requests] == ["rate_limit", None]


def test_rejected_response_format_is_a_bad_request(llm_server):
    llm_server.handle("title", _title_handler)
    llm_server.inject("reject_response_format")
    with pytest.raises(openai.BadRequestError) as raised:
        _ask_title(_client(llm_server))
    assert "response_format" in str(raised.value)
    # JSON mode is still accepted, which is what a client's fallback relies on
    llm_server.reject_response_format_always({"json_schema"})
    with pytest.raises(openai.BadRequestError):
        _ask_title(_client(llm_server))
    assert _ask_title(_client(llm_server), response_format="json_object").choices[0].message


def test_tool_call_round_trip(llm_server):
    def agent(role_input: dict, body: dict) -> dict:
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return {"tool_calls": [{"name": "search", "arguments": {"query": role_input["q"]}}]}
        return {"content": f"found: {results[-1]}"}

    llm_server.handle("agent", agent)
    client = _client(llm_server)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "search",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
            },
        }
    ]
    messages = _messages("agent", {"q": "vector index"})
    first = client.chat.completions.create(model="m", messages=messages, tools=tools)
    call = first.choices[0].message.tool_calls[0]
    assert first.choices[0].finish_reason == "tool_calls"
    assert call.id == "call_1" and call.function.name == "search"
    assert json.loads(call.function.arguments) == {"query": "vector index"}

    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "3 hits"},
    ]
    final = client.chat.completions.create(model="m", messages=messages, tools=tools)
    assert final.choices[0].message.content == "found: 3 hits"


def test_broken_replies(llm_server):
    llm_server.handle("title", _title_handler)
    client = _client(llm_server)
    llm_server.inject("truncated")
    truncated = _ask_title(client).choices[0]
    assert truncated.finish_reason == "length"
    with pytest.raises(ValueError):
        json.loads(truncated.message.content)

    llm_server.inject("malformed")
    malformed = _ask_title(client).choices[0].message.content
    assert "'title': 'Graph Databases'" in malformed and ",}" in malformed

    llm_server.inject("invalid")
    assert json.loads(_ask_title(client).choices[0].message.content) == {"words": 2}

    llm_server.inject("refuse")
    refused = _ask_title(client).choices[0].message
    assert refused.content is None and refused.refusal


def test_missing_handler_and_timeout(llm_server):
    with pytest.raises(openai.InternalServerError, match="no handler for role 'title'"):
        _ask_title(_client(llm_server))
    llm_server.handle("title", _title_handler)
    llm_server.inject("timeout", seconds=3)
    reply = _ask_title(_client(llm_server, timeout=0.3, max_retries=1))
    assert json.loads(reply.choices[0].message.content)["words"] == 2


def test_concurrent_requests_overlap(llm_server):
    llm_server.handle("title", _title_handler)
    llm_server.latency_seconds = 0.3
    client = _client(llm_server)
    with ThreadPoolExecutor(max_workers=8) as pool:
        replies = list(pool.map(lambda i: _ask_title(client, f"topic {i}"), range(8)))
    assert len(replies) == 8 and len(llm_server.requests) == 8
    # A server answering one request at a time would never hold two.
    assert llm_server.most_in_flight > 1
