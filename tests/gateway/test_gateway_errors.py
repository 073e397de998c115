"""Every error frame of the spec, the order they are checked in, and what bad input leaves."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import DISABLED_KEY, KEY, Recorder, chat_graph, fake_model, request, turn
from websockets.exceptions import ConnectionClosed

from memento_core import InvalidScope
from memento_gateway import Space

ERROR_FIELDS = ["status", "connection_id", "msg", "msgtype"]
RETURN_VOICE = "return_voice must be a number (0, 1, '0', or '1')"
MODEL_TEXT = "model must be a string of at most 256 characters without control characters"


def spaces(recorder: Recorder | None = None) -> dict[str, Space]:
    graph = chat_graph(fake_model("네, 알겠습니다."), recorder)
    return {KEY: Space("shop", graph), DISABLED_KEY: Space("off", graph, usable=False)}


def the_error(frames: list[dict[str, Any]]) -> str:
    assert len(frames) == 1, frames
    frame = frames[0]
    assert list(frame) == ERROR_FIELDS
    assert frame["status"] == "connected" and frame["msgtype"] == "error"
    assert len(frame["connection_id"]) == 16
    return str(frame["msg"])


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"api_key": ...}, "api_key is required"),
        ({"api_key": ""}, "api_key is required"),
        ({"api_key": None}, "api_key is required"),
        ({"msg": ...}, "msg is required"),
        ({"msg": ""}, "msg is required"),
        ({"msg": 5}, "msg is required"),
        ({"room_uid": ...}, "room_uid is required"),
        ({"room_uid": ""}, "room_uid is required"),
        ({"user_id": ...}, "user_id is required"),
        ({"user_id": None}, "user_id is required"),
        ({"api_key": "no-such-key"}, "api_key is not exist"),
        ({"api_key": DISABLED_KEY}, "api_key is not usable"),
        ({"return_voice": 2}, "return_voice must be a number (0, 1, '0', or '1')"),
        ({"return_voice": "yes"}, "return_voice must be a number (0, 1, '0', or '1')"),
        ({"return_voice": True}, "return_voice must be a number (0, 1, '0', or '1')"),
        ({"return_voice": 1.5}, "return_voice must be a number (0, 1, '0', or '1')"),
    ],
)
async def test_the_spec_error_texts(serving: Any, fields: dict[str, Any], expected: str) -> None:
    harness = await serving(spaces())
    async with harness.connect() as ws:
        assert the_error(await turn(ws, request(**fields))) == expected


async def test_errors_are_checked_in_the_documented_order(serving: Any) -> None:
    harness = await serving(spaces())
    all_wrong = {"msg": ..., "room_uid": ..., "user_id": ..., "return_voice": 7}
    expected = [
        ({"api_key": ...}, "api_key is required"),
        ({"api_key": "nope"}, "api_key is not exist"),
        ({"api_key": DISABLED_KEY}, "api_key is not usable"),
        ({}, "msg is required"),
        ({"msg": "hi"}, "room_uid is required"),
        ({"msg": "hi", "room_uid": "r"}, "user_id is required"),
        ({"msg": "hi", "room_uid": "r", "user_id": "u"}, RETURN_VOICE),
    ]  # fmt: skip
    async with harness.connect() as ws:
        for fixed, text in expected:
            assert the_error(await turn(ws, request(**{**all_wrong, **fixed}))) == text


@pytest.mark.parametrize("value", ["0", "1", 0, 1])
async def test_return_voice_accepts_the_four_spellings(serving: Any, value: Any) -> None:
    harness = await serving(spaces())
    async with harness.connect() as ws:
        frames = await turn(ws, request(return_voice=value))
    assert frames[0]["return_voice"] == int(value) and frames[-1]["status"] == "END"


@pytest.mark.parametrize("field", ["user_id", "room_uid"])
@pytest.mark.parametrize(
    "value",
    ["a\x00b", "\ud800", "x" * 257, {"nested": {"deeper": [1, 2, 3]}}, [[[["a"]]]], 12, "   "],
    ids=["nul", "lone-surrogate", "257-chars", "object", "nested-list", "number", "blank"],
)
async def test_bad_ids_get_an_error_frame_and_the_connection_stays(
    serving: Any, field: str, value: Any
) -> None:
    recorder = Recorder()
    harness = await serving(spaces(recorder))
    async with harness.connect() as ws:
        text = the_error(await turn(ws, request(**{field: value})))
        assert text == (
            f"{field} must be a string of 1 to 256 characters without control characters or "
            "lone surrogates"
        )
        assert recorder.calls == []  # nothing ran
        frames = await turn(ws, request())  # the connection still serves
    assert frames[-1]["status"] == "END"


async def test_a_256_character_id_is_accepted(serving: Any) -> None:
    harness = await serving(spaces())
    async with harness.connect() as ws:
        frames = await turn(ws, request(user_id="u" * 256, room_uid="r" * 256))
    assert frames[-1]["status"] == "END" and frames[0]["room_uid"] == "r" * 256


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("{not json", "the request is not valid JSON"),
        (b"\xff\xfe", "the request is not valid JSON"),
        ("[1, 2]", 'the request must be a JSON object with "action": "sendmsg"'),
        ('{"action": "joinroom"}', 'the request must be a JSON object with "action": "sendmsg"'),
        ("[" * 10_000 + "]" * 10_000, "the request is nested too deeply"),
        (
            '{"action": "sendmsg", "api_key": "key-shop", "msg": "hi", "room_uid": "r", '
            '"user_id": ' + "[" * 10_000 + "]" * 10_000 + "}",
            "the request is nested too deeply",
        ),
    ],
    ids=["broken", "bytes", "list", "other-action", "deep", "deep-user-id"],
)
async def test_unreadable_requests(serving: Any, raw: str | bytes, expected: str) -> None:
    harness = await serving(spaces())
    async with harness.connect() as ws:
        assert the_error(await turn(ws, raw)) == expected  # type: ignore[arg-type]
        assert (await turn(ws, request()))[-1]["status"] == "END"


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"params": "stream"}, "params must be a JSON object"),
        ({"params": {"stream": "maybe"}}, "stream must be true or false (or 1, 0, '1', '0')"),
        ({"no_save": 3}, "no_save must be true or false (or 1, 0, '1', '0')"),
        ({"params": {"no_history": []}}, "no_history must be true or false (or 1, 0, '1', '0')"),
        ({"params": {"model": {"x": 1}}}, MODEL_TEXT),
    ],
)  # fmt: skip
async def test_bad_parameters(serving: Any, params: dict[str, Any], expected: str) -> None:
    harness = await serving(spaces())
    async with harness.connect() as ws:
        assert the_error(await turn(ws, request(**params))) == expected


async def test_a_request_over_32_kb_closes_with_1009(serving: Any) -> None:
    harness = await serving(spaces())
    async with harness.connect() as ws:
        await ws.send(request(msg="가" * 11_000))  # 33 KB of UTF-8
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


async def test_a_model_error_gives_error_think_end_and_end(serving: Any) -> None:
    recorder = Recorder()
    failing = fake_model("이 답은 중간에 끊깁니다.", error_on_chunk_number=3)
    good = chat_graph(fake_model("다시 됩니다."), recorder)
    harness = await serving({KEY: Space("shop", chat_graph(failing)), "good": Space("s2", good)})
    async with harness.connect() as ws:
        frames = await turn(ws, request())
        again = await turn(ws, request(api_key="good"))
    tail = [f["status"] for f in frames[-3:]]
    assert tail == ["connected", "think", "END"]
    assert frames[-3]["msgtype"] == "error" and frames[-3]["msg"] == "FakeListChatModelError"
    assert frames[-2]["msg"] == "생각이 끝났습니다."
    assert [f["msg"] for f in frames if f["status"] == "stream"] == ["이", " ", "답"]
    assert "".join(f["msg"] for f in again if f["status"] == "stream") == "다시 됩니다."


async def test_a_graph_error_is_one_line_and_nothing_of_the_turn_is_half_saved(
    serving: Any,
) -> None:
    async def broken(state: Any) -> Any:
        raise RuntimeError("the tool backend is down\nTraceback: secret details")

    from langgraph.graph import START, MessagesState, StateGraph

    builder = StateGraph(MessagesState)
    builder.add_node("broken", broken)
    builder.add_edge(START, "broken")
    recorder = Recorder()
    harness = await serving(
        {
            KEY: Space("shop", builder.compile()),
            "good": Space("shop", chat_graph(fake_model("좋아요."), recorder)),
        }
    )
    async with harness.connect() as ws:
        frames = await turn(ws, request(msg="첫 질문"))
        await turn(ws, request(api_key="good", msg="두 번째 질문"))
    error = next(f for f in frames if f["msgtype"] == "error")
    assert error["msg"] == "the tool backend is down"
    # The same space and room: the user's first message was kept, no reply was invented.
    seen = [m.content for m in recorder.calls[0]]
    assert seen == ["첫 질문", "두 번째 질문"]


async def test_refused_requests_store_nothing(serving: Any, mem: Any) -> None:
    harness = await serving(spaces())
    async with harness.connect() as ws:
        await turn(ws, request(msg="기억할 말"))
        before = mem.stats()
        for bad in ({"user_id": "\x00"}, {"return_voice": 9}, {"api_key": "nope"}):
            await turn(ws, request(msg="남기면 안 되는 말", **bad))
        assert mem.stats() == before
    # the first turn's session holds only the good turn
    sessions = {Space("shop", chat_graph(fake_model("x"))).session_for("s8dfkjsdf", "51VPKp3F0yPX")}
    history = [m.content for s in sessions for m in mem.history(s)]
    assert history == ["기억할 말", "네, 알겠습니다."]
    assert json.dumps(history, ensure_ascii=False).count("남기면") == 0


async def test_a_huge_error_message_still_fits_one_frame(serving: Any) -> None:
    async def broken(state: Any) -> Any:
        raise ValueError("가" * 50_000)

    from langgraph.graph import START, MessagesState, StateGraph

    builder = StateGraph(MessagesState)
    builder.add_node("broken", broken)
    builder.add_edge(START, "broken")
    harness = await serving({KEY: Space("shop", builder.compile())})
    async with harness.connect() as ws:  # the client refuses frames over 32 KB
        frames = await turn(ws, request())
    error = next(f for f in frames if f["msgtype"] == "error")
    assert error["msg"] == "가" * 999 + "…"
    assert [f["status"] for f in frames[-2:]] == ["think", "END"]


async def test_a_failing_key_registry_is_an_error_frame(serving: Any, mem: Any) -> None:
    from memento_gateway import Gateway

    class Broken:
        async def resolve(self, api_key: str) -> Space | None:
            raise ConnectionError("key service unreachable")

    gateway = Gateway(mem, Broken())
    server = await gateway.serve("127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        from websockets.asyncio.client import connect

        async with connect(f"ws://127.0.0.1:{port}") as ws:
            first = await turn(ws, request())
            second = await turn(ws, request())
    finally:
        server.close()
        await server.wait_closed()
    assert the_error(first) == "api_key could not be checked: key service unreachable"
    assert the_error(second) == the_error(first)  # the connection stayed open


@pytest.mark.parametrize(
    "fields",
    [
        {"project_id": "adapter:langgraph"},
        {"user_id": "adapter:x"},
        {"space_id": "adapter:lg"},
        {"space_id": "adapter:lg", "project_id": "shop"},  # its users would be "adapter:lg:…"
    ],
    ids=["project", "user", "space-as-project", "space-as-user-prefix"],
)
def test_a_space_cannot_claim_an_adapters_reserved_scope(fields: dict[str, str]) -> None:
    """A LangGraph store's items live in ``adapter:<project>``; no space reaches them (issue 21)."""
    chosen = {"space_id": "shop", **fields}
    with pytest.raises(InvalidScope, match="reserved for adapters' own records"):
        Space(graph=chat_graph(fake_model("x")), **chosen)
