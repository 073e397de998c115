"""Every frame of a turn, field for field and in order, against the sendmsg spec."""

from __future__ import annotations

import json
from typing import Any

from conftest import KEY, chat_graph, chunked_model, fake_model, request, turn

from memento_gateway import Space

# The spec's frames, their fields in the spec's order (WSS 수신값).
START_FIELDS = [
    "status", "connection_id", "room_uid", "stream_uid", "scene_number", "msg", "is_stream",
    "cAt", "return_voice", "msgtype",
]  # fmt: skip
INFO_FIELDS = [
    "status", "connection_id", "stream_uid", "scene_number", "room_uid", "msg", "is_stream",
    "msgtype",
]  # fmt: skip
STREAM_FIELDS = [
    "status", "connection_id", "stream_uid", "scene_number", "room_uid", "sent_uid", "event",
    "data", "msg", "is_stream", "msgtype",
]  # fmt: skip
END_FIELDS = [
    "status", "connection_id", "stream_uid", "scene_number", "room_uid", "msg", "cAt",
    "is_stream", "return_voice", "msgtype",
]  # fmt: skip
# The spec's reply, chunked as its frames show it.
SPEC_CHUNKS = [
    "안", "녕하세요", "!", " 만나", "서", " 반", "갑", "습니다", ".", " ",
    " 저는", " 비", "모", "어", "라고", " 해", "요", ".", " ",
    " 울", "산", " 남", "구", "에서", " 김", "철", "수", "님의", " 특별", "한", " 기억", "이",
    " 있는", "지", " 여", "쭤", "봐", "도", " 될", "까요", "?", " ",
]  # fmt: skip
SPEC_SENTENCES = [
    "안녕하세요! 만나서 반갑습니다. ",
    " 저는 비모어라고 해요. ",
    " 울산 남구에서 김철수님의 특별한 기억이 있는지 여쭤봐도 될까요? ",
]


def statuses(frames: list[dict[str, Any]]) -> list[str]:
    return [frame["status"] for frame in frames]


async def test_a_turn_sends_the_spec_frames_in_order(serving: Any) -> None:
    reply = "안녕하세요! 만나서 반갑습니다."
    harness = await serving({KEY: Space("shop", chat_graph(fake_model(reply)))})
    async with harness.connect() as ws:
        frames = await turn(ws, request(room_uid="11VPKp3F0yPX"))

    streams = [f for f in frames if f["status"] == "stream"]
    assert statuses(frames) == [
        "START", "history", "history", "memory", "memory", "think",
        *["stream"] * len(reply), "think", "END",
    ]  # fmt: skip
    start, end = frames[0], frames[-1]
    assert list(start) == START_FIELDS and list(end) == END_FIELDS
    for frame in frames[1:6] + frames[-2:-1]:
        assert list(frame) == INFO_FIELDS
    for frame in streams:
        assert list(frame) == STREAM_FIELDS
    assert [f["msg"] for f in frames[1:6]] == [
        "대화 기억을 찾고 있습니다.",
        "대화 기억을 재생하였습니다.",
        "저장된 메모리를 찾고 있습니다.",
        "저장된 메모리를 찾았습니다. 핫워드 수신으로 설정된 메모리는 총 0개 입니다.",
        "생각을 시작합니다.",
    ]
    assert frames[-2]["msg"] == "생각이 끝났습니다."
    # One connection id, stream uid and room for the whole turn; START and END share cAt.
    assert {f["connection_id"] for f in frames} == {start["connection_id"]}
    assert {f["stream_uid"] for f in frames} == {start["stream_uid"]}
    assert {f["room_uid"] for f in frames} == {"11VPKp3F0yPX"}
    assert {f["scene_number"] for f in frames} == {0}
    assert {f["is_stream"] for f in frames} == {True}
    assert start["cAt"] == end["cAt"] and float(start["cAt"]) > 0
    assert start["msg"] == "" and end["msg"] == ""  # END never carries the reply
    assert start["return_voice"] == end["return_voice"] == 0
    assert {f["msgtype"] for f in frames if f["status"] != "stream"} == {"info"}
    assert len(start["connection_id"]) == 16 and len(start["stream_uid"]) == 25
    # Stream frames: LangChain's on_chat_model_stream, the chunk twice (data and msg).
    for frame in streams:
        assert frame["event"] == "on_chat_model_stream" and frame["msgtype"] == "stream"
        assert frame["data"] == {"chunk": {"content": frame["msg"]}}
        assert len(frame["sent_uid"]) == 28
    assert "".join(f["msg"] for f in streams) == reply


async def test_sent_uid_changes_per_sentence_as_in_the_spec(serving: Any) -> None:
    model = chunked_model(SPEC_CHUNKS)
    harness = await serving({KEY: Space("shop", chat_graph(model))})
    async with harness.connect() as ws:
        frames = await turn(ws, request())
    streams = [f for f in frames if f["status"] == "stream"]
    assert [f["msg"] for f in streams] == SPEC_CHUNKS  # chunks pass through unchanged
    sentences: dict[str, str] = {}
    for frame in streams:
        sentences[frame["sent_uid"]] = sentences.get(frame["sent_uid"], "") + frame["msg"]
    assert list(sentences.values()) == SPEC_SENTENCES


async def test_one_sent_uid_when_the_space_keeps_sentences_together(serving: Any) -> None:
    reply = "First sentence is here. Second one follows. Third."
    space = Space("shop", chat_graph(fake_model(reply)), sentences=False)
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        frames = await turn(ws, request())
    assert len({f["sent_uid"] for f in frames if f["status"] == "stream"}) == 1


async def test_stream_false_sends_a_frame_per_sentence(serving: Any) -> None:
    reply = "First sentence is here. Second one follows. Third."
    harness = await serving({KEY: Space("shop", chat_graph(fake_model(reply)))})
    async with harness.connect() as ws:
        frames = await turn(ws, request(params={"stream": False}))
    streams = [f for f in frames if f["status"] == "stream"]
    # One character a chunk: the space after a sentence is its own chunk, and stays with it.
    assert [f["msg"] for f in streams] == [
        "First sentence is here. ",
        "Second one follows. ",
        "Third.",
    ]
    assert {f["is_stream"] for f in frames} == {False}
    assert len({f["sent_uid"] for f in streams}) == 3


async def test_return_voice_is_echoed_and_defaults_to_the_space(serving: Any) -> None:
    space = Space("shop", chat_graph(fake_model("네.")), return_voice=1)
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        default = await turn(ws, request())
        given = await turn(ws, request(return_voice="0"))
    assert default[0]["return_voice"] == default[-1]["return_voice"] == 1
    assert given[0]["return_voice"] == given[-1]["return_voice"] == 0


async def test_frames_are_compact_json(serving: Any) -> None:
    harness = await serving({KEY: Space("shop", chat_graph(fake_model("네.")))})
    async with harness.connect() as ws:
        await ws.send(request())
        raw = await ws.recv()
    assert isinstance(raw, str)
    assert raw == json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":"))


async def test_numbers_and_versions_do_not_end_a_sentence(serving: Any) -> None:
    reply = "버전 3.5는 v1.2보다 빠릅니다. 다음 문장이 이어집니다."
    harness = await serving({KEY: Space("shop", chat_graph(fake_model(reply)))})
    async with harness.connect() as ws:
        frames = await turn(ws, request())
    sentences: dict[str, str] = {}
    for frame in (f for f in frames if f["status"] == "stream"):
        sentences[frame["sent_uid"]] = sentences.get(frame["sent_uid"], "") + frame["msg"]
    assert list(sentences.values()) == ["버전 3.5는 v1.2보다 빠릅니다. ", "다음 문장이 이어집니다."]
