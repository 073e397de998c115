"""The WebSocket example, driven by a real client on loopback: event order, the 32 KB rule, and
a memory firing once per conversation."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from memento_core.hotwords import HotwordDetector, HotwordSet

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hotword_stream_server.py"
FRAME = 32_768

HOTWORDS = HotwordSet.from_json(
    [
        {
            "uid": "jomalone",
            "v": ["조말론", "조 말론 런던", "조 말론", "Jo Malone"],
            "data": {"brand": "Jo Malone London", "floor": 3},
        },
        {"uid": "doson", "v": ["도손", "Do Son"], "data": {"blob": "가" * 12_000}},  # 36 KB
        {"uid": "street34", "v": ["34번가"]},
    ]
)
REPLY = ["Sure. ", "Jo Ma", "lone is", " on 34번", "가, and Do", " Son", " too."]


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hotword_stream_server", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
async def url() -> AsyncIterator[str]:
    example = load_example()
    detector = HotwordDetector(HOTWORDS)

    async def detector_for(user_id: str) -> HotwordDetector:
        return detector

    server = await example.start(
        example.HotwordStreamServer(detector_for, reply=lambda message: REPLY)
    )
    async with server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}"


def request(msg: str, **fields: str) -> str:
    body = {"action": "sendmsg", "room_uid": "r1", "user_id": "u1", "msg": msg, "api_key": "k"}
    body.update(fields)
    return json.dumps({key: value for key, value in body.items() if value != "-"})


async def exchange(client: ClientConnection, message: str) -> list[dict[str, Any]]:
    """Send one request; collect every frame up to and including END."""
    await client.send(message)
    events: list[dict[str, Any]] = []
    while not events or events[-1]["status"] not in ("END", "connected"):
        frame = await client.recv()
        assert len(frame.encode("utf-8") if isinstance(frame, str) else frame) <= FRAME
        events.append(json.loads(frame))
    return events


def summary(events: list[dict[str, Any]]) -> list[str]:
    """One short line per event, to compare sequences at a glance."""
    lines = []
    for event in events:
        if event["status"] == "stream":
            lines.append(f"stream {event['data']['chunk']['content']}")
        elif event["status"] in ("hotword_detected", "memory_dict"):
            lines.append(f"{event['status']} {event['hotword_uid']} {event['hotword']}")
        else:
            lines.append(event["status"])
    return lines


async def test_reply_streams_with_events_before_the_chunk_that_completes_each_hotword(
    url: str,
) -> None:
    async with connect(url, max_size=FRAME) as client:
        events = await exchange(client, request("hello"))

    assert summary(events) == [
        "START",
        "stream Sure. ",
        "stream Jo Ma",
        "hotword_detected jomalone Jo Malone",
        "memory_dict jomalone Jo Malone",
        "stream lone is",
        "stream  on 34번",
        "hotword_detected street34 34번가",
        "stream 가, and Do",
        "hotword_detected doson Do Son",  # its 36 KB payload is not sent: fetch it by uid
        "stream  Son",
        "stream  too.",
        "END",
    ]
    connection_id = events[0]["connection_id"]
    assert all(event["connection_id"] == connection_id for event in events)
    assert events[0] == {
        "status": "START",
        "connection_id": connection_id,
        "room_uid": "r1",
        "msg": "",
        "msgtype": "info",
    }
    assert events[4] == {
        "status": "memory_dict",
        "connection_id": connection_id,
        "msg": '[{"k":"brand","v":"Jo Malone London"},{"k":"floor","v":3}]',
        "hotword": "Jo Malone",
        "hotword_uid": "jomalone",
        "msgtype": "hotword",
    }
    assert events[-1]["msg"] == "".join(REPLY)


async def test_a_second_mention_in_the_same_conversation_sends_nothing(url: str) -> None:
    async with connect(url, max_size=FRAME) as client:
        first = await exchange(client, request("조말론 is where?"))
        second = await exchange(client, request("and 조말론 again?"))

    assert summary(first)[:3] == [
        "START",
        "hotword_detected jomalone 조말론",  # from the user's message
        "memory_dict jomalone 조말론",
    ]
    assert "hotword_detected jomalone Jo Malone" not in summary(first)  # the reply's mention
    assert [line for line in summary(second) if not line.startswith("stream")] == ["START", "END"]


async def test_another_room_is_another_conversation(url: str) -> None:
    async with connect(url, max_size=FRAME) as client:
        await exchange(client, request("hello", room_uid="r1"))
        other = await exchange(client, request("hello", room_uid="r2"))

    assert "hotword_detected jomalone Jo Malone" in summary(other)


@pytest.mark.parametrize("field", ["room_uid", "user_id", "api_key"])
async def test_a_missing_field_gets_the_protocol_error(url: str, field: str) -> None:
    async with connect(url, max_size=FRAME) as client:
        answer = await exchange(client, request("hello", **{field: "-"}))
        still_served = await exchange(client, request("hello"))

    assert answer == [{"status": "connected", "msg": f"{field} is required", "msgtype": "error"}]
    assert summary(still_served)[-1] == "END"


async def test_malformed_requests_get_an_error(url: str) -> None:
    async with connect(url, max_size=FRAME) as client:
        not_json = await exchange(client, "{oops")
        wrong_action = await exchange(client, json.dumps({"action": "dance"}))

    assert not_json[0]["msgtype"] == wrong_action[0]["msgtype"] == "error"
    assert not_json[0]["msg"] == "message is not valid JSON"
