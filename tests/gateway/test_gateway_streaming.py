"""The voice hook, passed-through chain events, long replies, many connections, and clients that
go away mid-reply."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from conftest import KEY, Recorder, chat_graph, chunked_model, fake_model, request, turn

from memento_core import Memento
from memento_gateway import MAX_FRAME_BYTES, Sentence, Space, Voice

VOICE_FIELDS = [
    "status", "connection_id", "stream_uid", "scene_number", "room_uid", "msg", "voice_url",
    "voice_length", "sent_uid", "is_stream", "msgtype",
]  # fmt: skip
CHAIN_FIELDS = ["event", "data", "run_id", "parent_ids", "tags"]
USER, ROOM = "s8dfkjsdf", "51VPKp3F0yPX"


async def wait_for_no_turns(harness: Any) -> None:
    """Until the gateway has no turn running (a guard bounds it; no time is asserted)."""
    for _ in range(3000):
        if harness.gateway.running_turns == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("a turn is still running")


async def test_voice_ready_follows_each_sentence_from_the_hook(serving: Any) -> None:
    asked: list[Sentence] = []

    async def voice(sentence: Sentence) -> Voice | None:
        asked.append(sentence)
        if "skip" in sentence.text:
            return None
        return Voice(f"https://voice.example/{sentence.sent_uid}.mp3", len(sentence.text) / 10)

    reply = "안녕하세요! 만나서 반갑습니다. 이 문장은 skip 합니다. 마지막 문장이에요."
    harness = await serving({KEY: Space("shop", chat_graph(fake_model(reply)))}, voice=voice)
    async with harness.connect() as ws:
        frames = await turn(ws, request(return_voice=1))
        silent = await turn(ws, request(return_voice=0))
    voices = [f for f in frames if f["status"] == "voice_ready"]
    assert [v["msg"] for v in voices] == ["안녕하세요! 만나서 반갑습니다. ", "마지막 문장이에요."]
    assert [s.text for s in asked] == [
        "안녕하세요! 만나서 반갑습니다. ",
        "이 문장은 skip 합니다. ",
        "마지막 문장이에요.",
    ]
    for frame in voices:
        assert list(frame) == VOICE_FIELDS and frame["msgtype"] == "info"
        assert frame["voice_url"] == f"https://voice.example/{frame['sent_uid']}.mp3"
        assert frame["voice_length"] == len(frame["msg"]) / 10
        index = frames.index(frame)
        # after its sentence's last stream frame, before the next sentence's first
        assert frames[index - 1]["sent_uid"] == frame["sent_uid"]
        assert frames[index + 1]["status"] in ("stream", "think")
        assert frames[index + 1].get("sent_uid") != frame["sent_uid"]
    assert asked[0].room_uid == ROOM and asked[0].stream_uid == frames[0]["stream_uid"]
    assert "voice_ready" not in [f["status"] for f in silent] and len(asked) == 3


async def test_no_voice_ready_without_a_hook(serving: Any) -> None:
    harness = await serving({KEY: Space("shop", chat_graph(fake_model("문장 하나입니다.")))})
    async with harness.connect() as ws:
        frames = await turn(ws, request(return_voice=1))
    assert "voice_ready" not in [f["status"] for f in frames]


async def test_chain_events_pass_through_when_the_space_or_the_request_asks(serving: Any) -> None:
    graph = chat_graph(fake_model("네."))
    harness = await serving(
        {KEY: Space("shop", graph, chain_events=True), "quiet": Space("shop", graph)}
    )
    async with harness.connect() as ws:
        frames = await turn(ws, request())
        quiet = await turn(ws, request(api_key="quiet"))
        asked = await turn(ws, request(api_key="quiet", params={"chain_events": True}))
        declined = await turn(ws, request(chain_events=False))
    assert next(f["event"] for f in asked if "status" not in f) == "on_chain_start"
    assert not [f for f in declined if "status" not in f]
    events = [f for f in frames if "event" in f and "status" not in f]
    assert events and all(list(f) == CHAIN_FIELDS for f in events)
    names = [f["event"] for f in events]
    assert names[0] == "on_chain_start" and names[-1] == "on_chain_end"
    assert "on_chat_model_start" in names
    root = events[0]
    assert root["parent_ids"] == [] and events[-1]["run_id"] == root["run_id"]
    assert all(f["data"] == {} for f in events)
    think = [i for i, f in enumerate(frames) if f.get("status") == "think"]
    assert think[0] < frames.index(root) and frames.index(events[-1]) < think[1]
    assert not [f for f in quiet if "status" not in f]


async def test_a_40_kb_reply_streams_in_frames_under_32_kb_and_is_saved_whole(
    serving: Any, mem: Memento
) -> None:
    reply = "x" * 40_000 + " 그리고 " + "가" * 14_000  # 40 KB of ASCII and 42 KB of Hangul
    space = Space("shop", chat_graph(chunked_model([reply[:40_000], reply[40_000:]])))
    harness = await serving({KEY: space})
    sizes: list[int] = []
    async with harness.connect() as ws:  # the client refuses frames over 32 KB
        await ws.send(request(msg="길게 말해 줘"))
        frames: list[dict[str, Any]] = []
        while not frames or frames[-1]["status"] != "END":
            raw = await ws.recv()
            sizes.append(len(raw.encode("utf-8")))
            frames.append(json.loads(raw))
        after = await turn(ws, request(msg="고마워"))
    assert max(sizes) <= MAX_FRAME_BYTES
    assert "".join(f["msg"] for f in frames if f["status"] == "stream") == reply
    assert frames[-1]["msg"] == "" and after[-1]["status"] == "END"
    saved = [m.content for m in mem.history(space.session_for(USER, ROOM))]
    thanks = saved.index("고마워")
    assert saved[0] == "길게 말해 줘" and thanks == 3  # the reply in two messages of ≤ 32,000
    assert "".join(saved[1:thanks]) == reply


async def test_fifty_connections_at_once(serving: Any) -> None:
    graph = chat_graph(fake_model("동시에 답합니다. 문제 없어요."))
    harness = await serving({KEY: Space("shop", graph, recall_budget=0)})

    async def client(n: int) -> list[dict[str, Any]]:
        async with harness.connect() as ws:
            return await turn(ws, request(room_uid=f"room-{n}", user_id=f"user-{n}"))

    results = await asyncio.gather(*(client(n) for n in range(50)))
    assert len({frames[0]["connection_id"] for frames in results}) == 50
    for n, frames in enumerate(results):
        assert frames[0]["status"] == "START" and frames[-1]["status"] == "END"
        assert {f["room_uid"] for f in frames if "room_uid" in f} == {f"room-{n}"}
        streamed = "".join(f["msg"] for f in frames if f["status"] == "stream")
        assert streamed == "동시에 답합니다. 문제 없어요."


async def test_a_client_that_goes_away_cancels_the_run_and_keeps_saved_turns(
    serving: Any, mem: Memento
) -> None:
    recorder = Recorder()
    slow = fake_model("첫 답.", "아주 긴 답이 천천히 옵니다. " * 40, "셋째 답.", sleep=0.05)
    space = Space("shop", chat_graph(slow, recorder), recall_budget=0)
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        await turn(ws, request(msg="첫 질문"))
        await ws.send(request(msg="긴 이야기 해줘"))
        streamed = 0
        while streamed < 3:
            streamed += json.loads(await ws.recv())["status"] == "stream"
        ws.transport.abort()  # gone, without a close frame
    await wait_for_no_turns(harness)
    assert recorder.finished == 1  # the second run never finished: it was cancelled
    session = space.session_for(USER, ROOM)
    assert [m.content for m in mem.history(session)] == ["첫 질문", "첫 답.", "긴 이야기 해줘"]
    async with harness.connect() as ws:  # the room goes on, with every saved turn
        frames = await turn(ws, request(msg="다시 왔어요"))
    assert frames[-1]["status"] == "END"
    assert [str(m.content) for m in recorder.calls[-1]] == [
        "첫 질문",
        "첫 답.",
        "긴 이야기 해줘",
        "다시 왔어요",
    ]
    assert recorder.finished == 2  # the first turn and this one: the cancelled run never ended


async def test_many_abrupt_disconnects_leave_the_gateway_serving(serving: Any) -> None:
    slow = fake_model("천천히 오는 답입니다. " * 20, sleep=0.01)
    harness = await serving({KEY: Space("shop", chat_graph(slow), recall_budget=0)})

    async def drop(n: int) -> None:
        async with harness.connect() as ws:
            await ws.send(request(room_uid=f"r{n}"))
            for _ in range(n % 7 + 1):
                await ws.recv()
            ws.transport.abort()

    await asyncio.gather(*(drop(n) for n in range(20)))
    await wait_for_no_turns(harness)
    async with harness.connect() as ws:
        frames = await turn(ws, request(room_uid="after"))
    assert frames[-1]["status"] == "END"
