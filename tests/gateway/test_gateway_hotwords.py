"""Hotword frames in the stream, and who may see which memories (over WebSocket and HTTP)."""

from __future__ import annotations

import json
from typing import Any

from conftest import (
    DISABLED_KEY,
    KEY,
    OTHER_KEY,
    chat_graph,
    chunked_model,
    fake_model,
    http_get,
    request,
    turn,
)

from memento_core import Memento, Scope
from memento_gateway import Space

USER = "s8dfkjsdf"
DO_SON = {"city": "Hai Phong", "distance_km": 20}


def shop(graph: Any, **options: Any) -> Space:
    return Space("shop", graph, **options)


def seed(mem: Memento, space: Space, **extra: Any) -> tuple[str, str]:
    scope = space.scope_for(USER)
    do_son = mem.remember(
        "Do Son beach is 20 km south-east of Hai Phong.",
        scope=scope,
        hotwords=["도손", "Do Son"],
        data=DO_SON,
    )
    jo_malone = mem.remember(
        "Jo Malone London is on the third floor.", scope=scope, hotwords=["조말론", "Jo Malone"]
    )
    return do_son, jo_malone


def position(frames: list[dict[str, Any]], status: str, msg: str | None = None) -> int:
    return next(
        i for i, f in enumerate(frames) if f["status"] == status and msg in (None, f["msg"])
    )


async def test_hotword_frames_come_just_before_the_chunk_that_completes_them(
    serving: Any, mem: Memento
) -> None:
    chunks = ["하이퐁 근처 도", "손에 가 보세요. 조말", "론도 있어요."]
    space = shop(chat_graph(chunked_model(chunks)))
    do_son, jo_malone = seed(mem, space)
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        frames = await turn(ws, request(msg="어디 갈까요?"))
    found = next(f for f in frames if f["status"] == "memory" and "총" in f["msg"])
    assert found["msg"].endswith("총 2개 입니다.")
    order = [
        (f["status"], f["msg"] if f["status"] == "stream" else f.get("hotword")) for f in frames
    ]
    think = position(frames, "think")
    assert order[think + 1 :] == [
        ("stream", "하이퐁 근처 도"),
        ("hotword_detected", "도손"),
        ("memory_dict", "도손"),
        ("stream", "손에 가 보세요."),
        ("stream", " 조말"),
        ("hotword_detected", "조말론"),
        ("stream", "론도 있어요."),
        ("think", None),
        ("END", None),
    ]
    detected = frames[position(frames, "hotword_detected")]
    assert detected == {
        "status": "hotword_detected",
        "connection_id": frames[0]["connection_id"],
        "msg": '핫워드 "도손"가 감지되었습니다.',
        "hotword": "도손",
        "hotword_uid": do_son,
        "msgtype": "info",
    }
    payload = frames[position(frames, "memory_dict")]
    assert payload["msgtype"] == "hotword" and payload["hotword_uid"] == do_son
    assert json.loads(payload["msg"]) == [
        {"k": "city", "v": "Hai Phong"},
        {"k": "distance_km", "v": 20},
    ]
    assert (
        frames[position(frames, "hotword_detected", '핫워드 "조말론"가 감지되었습니다.')][
            "hotword_uid"
        ]
        == jo_malone
    )


async def test_one_character_chunks_split_korean_words_and_still_interleave(
    serving: Any, mem: Memento
) -> None:
    reply = "네, 조말론 매장과 도손 해변을 안내해 드릴게요."
    space = shop(chat_graph(fake_model(reply)))  # streams one character at a time
    seed(mem, space)
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        frames = await turn(ws, request(msg="안내해 주세요"))
    statuses = [f["status"] if f["status"] != "stream" else f["msg"] for f in frames]
    jo = statuses.index("hotword_detected")
    assert statuses[jo - 2 : jo + 2] == ["조", "말", "hotword_detected", "론"]
    do = statuses.index("hotword_detected", jo + 1)
    assert statuses[do - 1 : do + 3] == ["도", "hotword_detected", "memory_dict", "손"]
    assert "".join(f["msg"] for f in frames if f["status"] == "stream") == reply


async def test_the_users_message_fires_first_and_each_memory_once_per_room(
    serving: Any, mem: Memento
) -> None:
    space = shop(chat_graph(fake_model("도손은 멀지 않아요.")))
    seed(mem, space)
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        first = await turn(ws, request(msg="도손 가는 길 알려줘"))
        second = await turn(ws, request(msg="도손 또 물어볼게"))
        other_room = await turn(ws, request(msg="도손?", room_uid="another-room"))
    statuses = [f["status"] for f in first]
    assert statuses.index("hotword_detected") > statuses.index("memory")
    assert statuses.index("memory_dict") < statuses.index("think")
    assert statuses.count("hotword_detected") == 1  # not again in the reply
    assert "hotword_detected" not in [f["status"] for f in second]
    assert [f["status"] for f in other_room].count("hotword_detected") == 1


async def test_a_payload_over_32_kb_goes_as_uid_and_http_returns_it_whole(
    serving: Any, mem: Memento
) -> None:
    space = shop(chat_graph(fake_model("도손 이야기입니다.")))
    big = {"notes": "해변 " * 12_000}
    uid = mem.remember(
        "Do Son travel notes.", scope=space.scope_for(USER), hotwords=["도손"], data=big
    )
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        frames = await turn(ws, request(msg="알려줘"))
    detected = [f for f in frames if f["status"] in ("hotword_detected", "memory_dict")]
    assert [f["status"] for f in detected] == ["hotword_detected"]
    assert detected[0]["hotword_uid"] == uid
    status, body = await http_get(
        f"{harness.http}/v4/memory/{uid}?user_id={USER}", Authorization=f"Bearer {KEY}"
    )
    assert status == 200
    assert body["uid"] == uid and body["data"] == big and body["content"] == "Do Son travel notes."
    assert body["hotwords"] == ["도손"]


async def test_identity_comes_from_the_key_not_the_claimed_user_id(
    serving: Any, mem: Memento
) -> None:
    """Memories of a space's user, or stored for a bare user id, stay out of other keys' reach."""
    space = shop(chat_graph(fake_model("도손? 조말론? 모릅니다.")))
    seed(mem, space)
    mem.remember(
        "Demo's own secret.", scope=Scope(user_id="demo"), hotwords=["비밀"], data={"pin": 1234}
    )
    other = Space("other", chat_graph(fake_model("도손? 조말론? 비밀? 모릅니다.")))
    harness = await serving({KEY: space, OTHER_KEY: other})
    async with harness.connect() as ws:
        stolen = await turn(ws, request(api_key=OTHER_KEY, msg="도손 조말론 비밀"))
        as_demo = await turn(ws, request(api_key=OTHER_KEY, user_id="demo", msg="비밀 알려줘"))
        as_demo_here = await turn(ws, request(user_id="demo", msg="비밀 도손"))
    for frames in (stolen, as_demo, as_demo_here):
        assert not [f for f in frames if f["status"] in ("hotword_detected", "memory_dict")]
        assert any(f["msg"].endswith("총 0개 입니다.") for f in frames if f["status"] == "memory")


async def test_memory_http_authorises_with_the_key_and_the_space(
    serving: Any, mem: Memento
) -> None:
    space = shop(chat_graph(fake_model("네.")))
    private, _ = seed(mem, space)
    team = mem.remember(
        "Shop-wide: returns within 30 days.",
        scope=Scope(project_id=space.project),
        privacy="team",
        data={"days": 30},
    )
    harness = await serving(
        {
            KEY: space,
            OTHER_KEY: Space("other", space.graph),
            DISABLED_KEY: Space("shop", space.graph, usable=False),
        }
    )
    base = f"{harness.http}/v4/memory"
    assert await http_get(f"{base}/{private}") == (
        401,
        {"msg": "api_key is required", "msgtype": "error"},
    )
    assert (await http_get(f"{base}/{private}?api_key=nope"))[1]["msg"] == "api_key is not exist"
    assert (await http_get(f"{base}/{private}", api_key=DISABLED_KEY)) == (
        403,
        {"msg": "api_key is not usable", "msgtype": "error"},
    )
    mine = await http_get(f"{base}/{private}?api_key={KEY}&user_id={USER}")
    assert mine[0] == 200 and mine[1]["data"] == DO_SON
    # Without the user, or for another user, or from another space: not found, like a bad uid.
    for url in (
        f"{base}/{private}?api_key={KEY}",
        f"{base}/{private}?api_key={KEY}&user_id=someone-else",
        f"{base}/{private}?api_key={OTHER_KEY}&user_id={USER}",
        f"{base}/no-such-uid?api_key={KEY}&user_id={USER}",
    ):
        status, body = await http_get(url)
        assert status == 404 and body["msgtype"] == "error", url
    # The space's team memory: every user of the space, and only that space.
    assert (await http_get(f"{base}/{team}?api_key={KEY}"))[1]["data"] == {"days": 30}
    assert (await http_get(f"{base}/{team}?api_key={OTHER_KEY}"))[0] == 404
    bad_user = await http_get(f"{base}/{team}?api_key={KEY}&user_id=%00")
    assert bad_user[0] == 400 and "user_id must be a string" in bad_user[1]["msg"]
