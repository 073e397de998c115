"""Rooms as chat sessions: history, no_history, no_save, message variables, long-term recall,
archiving when the connection ends, and the request parameters that reach the graph."""

from __future__ import annotations

from typing import Any

from conftest import KEY, Recorder, chat_graph, fake_model, request, turn
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import START, MessagesState, StateGraph

from memento_core import Memento, Scope
from memento_gateway import Space

USER = "s8dfkjsdf"
ROOM = "51VPKp3F0yPX"


def texts(messages: list[Any]) -> list[tuple[str, str]]:
    return [(type(m).__name__, str(m.content)) for m in messages]


async def test_a_room_replays_its_history_and_no_history_leaves_it_out(serving: Any) -> None:
    recorder = Recorder()
    space = Space("shop", chat_graph(fake_model("첫 답.", "둘째 답.", "셋째 답."), recorder))
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        await turn(ws, request(msg="첫 질문"))
        await turn(ws, request(msg="둘째 질문"))
        alone = await turn(ws, request(msg="셋째 질문", params={"no_history": True}))
    assert texts(recorder.calls[1]) == [
        ("HumanMessage", "첫 질문"),
        ("AIMessage", "첫 답."),
        ("HumanMessage", "둘째 질문"),
    ]
    assert texts(recorder.calls[2]) == [("HumanMessage", "셋째 질문")]
    assert "history" not in [f["status"] for f in alone]


async def test_rooms_and_users_do_not_share_history(serving: Any) -> None:
    recorder = Recorder()
    harness = await serving({KEY: Space("shop", chat_graph(fake_model("답."), recorder))})
    async with harness.connect() as ws:
        await turn(ws, request(msg="A의 말"))
        await turn(ws, request(msg="다른 방", room_uid="room-2"))
        await turn(ws, request(msg="다른 사람", user_id="someone-else"))
    assert texts(recorder.calls[1]) == [("HumanMessage", "다른 방")]
    assert texts(recorder.calls[2]) == [("HumanMessage", "다른 사람")]


async def test_no_save_leaves_no_trace(serving: Any, mem: Memento) -> None:
    recorder = Recorder()
    space = Space("shop", chat_graph(fake_model("첫 답.", "비밀 답.", "셋째 답."), recorder))
    harness = await serving({KEY: space})
    session = space.session_for(USER, ROOM)
    async with harness.connect() as ws:
        await turn(ws, request(msg="저장할 말"))
        before_history, before_items = mem.history(session), mem.items()
        await turn(ws, request(msg="비밀 이야기", params={"no_save": True}))
        await turn(ws, request(msg="다음 말"))
    await harness.close()
    contents = [m.content for m in mem.history(session)]
    assert "비밀 이야기" not in contents and "비밀 답." not in contents
    assert [m.content for m in before_history] == ["저장할 말", "첫 답."]
    assert contents == ["저장할 말", "첫 답.", "다음 말", "셋째 답."]
    assert not any("비밀 이야기" in item.content for item in mem.items())
    # Only the archive of the saved turns: one memory a turn, and one summary.
    archived = [item for item in mem.items() if item not in before_items]
    assert sorted(t for item in archived for t in item.tags) == ["chat-archive"] + ["chat-turn"] * 4
    # The turn itself ran with the room's history, and was answered.
    assert texts(recorder.calls[1])[-1] == ("HumanMessage", "비밀 이야기")


async def test_a_no_save_only_room_is_not_archived(serving: Any, mem: Memento) -> None:
    harness = await serving({KEY: Space("shop", chat_graph(fake_model("답.")))})
    async with harness.connect() as ws:
        await turn(ws, request(msg="흔적 없이", no_save=1))
    await harness.close()
    assert mem.items() == []


async def test_the_session_is_archived_when_the_connection_ends(serving: Any, mem: Memento) -> None:
    space = Space("shop", chat_graph(fake_model("Lisbon has great tiles and trams.")))
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        await turn(ws, request(msg="Tell me about Lisbon"))
    await harness.close()
    stored = mem.items(scope=space.scope_for(USER))
    [archive] = [item for item in stored if "chat-archive" in item.tags]
    turns = [item for item in stored if "chat-turn" in item.tags]
    assert archive.type.value == "episodic" and len(turns) == 2  # the question and the reply
    for item in (archive, *turns):
        assert item.scope.user_id == space.user_for(USER)
        assert item.scope.session_id == space.session_for(USER, ROOM)
    assert "Lisbon" in archive.content
    assert any("great tiles" in turn.content for turn in turns)


async def test_long_term_memories_are_recalled_into_the_graph(serving: Any, mem: Memento) -> None:
    recorder = Recorder()
    space = Space("shop", chat_graph(fake_model("알겠어요."), recorder))
    mem.remember("The user is allergic to peanuts.", scope=space.scope_for(USER))
    mem.remember("Someone else likes peanuts.", scope=space.scope_for("someone-else"))
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        await turn(ws, request(msg="Any peanuts allergy I should know about?"))
    [system] = [m for m in recorder.calls[0] if isinstance(m, SystemMessage)]
    assert "allergic to peanuts" in str(system.content)
    assert "Someone else" not in str(system.content)


async def test_message_variables_are_filled_before_the_graph_runs(serving: Any) -> None:
    recorder = Recorder()
    space = Space(
        "shop",
        chat_graph(fake_model("첫 답.", "둘째 답."), recorder),
        system_prompt="You are talking with {{visitor_name}}.\nEarlier:\n{{history}}",
        recall_budget=0,
    )
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        await turn(ws, request(msg="첫 질문"))
        await turn(ws, request(msg="{{visitor_name}} 입니다", params={"visitor_name": "김철수"}))
    first, second = recorder.calls
    assert first[0].content == "You are talking with s8dfkjsdf.\nEarlier:\n"
    assert second[0].content == (
        "You are talking with 김철수.\nEarlier:\nuser: 첫 질문\nassistant: 첫 답."
    )
    assert second[-1].content == "김철수 입니다"


async def test_model_and_identity_reach_the_graph_config(serving: Any) -> None:
    seen: list[dict[str, Any]] = []

    async def node(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        seen.append(dict(config.get("configurable") or {}))
        return {"messages": [AIMessage("ok.")]}

    builder = StateGraph(MessagesState)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    space = Space("shop", builder.compile(), recall_budget=0)
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        frames = await turn(ws, request(params={"model": "gpt-x"}))
    assert seen[0]["model"] == "gpt-x"
    assert seen[0]["user_id"] == space.user_for(USER) == f"shop:{USER}"
    assert seen[0]["thread_id"] == space.session_for(USER, ROOM)
    assert seen[0]["room_uid"] == ROOM
    # A node that does not stream: its final message still goes out as stream frames.
    assert "".join(f["msg"] for f in frames if f["status"] == "stream") == "ok."


async def test_a_plain_runnable_gets_the_messages(serving: Any) -> None:
    model = fake_model("모델이 직접 답합니다.")
    seen: list[Any] = []

    def echo(messages: list[Any]) -> str:
        seen.append(messages)
        return "문자열 답."

    harness = await serving(
        {KEY: Space("shop", model), "lambda": Space("shop", RunnableLambda(echo))}
    )
    async with harness.connect() as ws:
        direct = await turn(ws, request(msg="안녕"))
        plain = await turn(ws, request(api_key="lambda", msg="또 안녕"))
    assert "".join(f["msg"] for f in direct if f["status"] == "stream") == "모델이 직접 답합니다."
    assert "".join(f["msg"] for f in plain if f["status"] == "stream") == "문자열 답."
    assert isinstance(seen[0][-1], HumanMessage) and seen[0][-1].content == "또 안녕"


async def test_an_empty_turn_when_the_space_allows_it(serving: Any) -> None:
    recorder = Recorder()
    space = Space("shop", chat_graph(fake_model("어서 오세요!"), recorder), allow_empty_msg=True)
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        frames = await turn(ws, request(msg=...))
    assert frames[-1]["status"] == "END"
    assert recorder.calls == [[]]  # no new user message, no history yet
    assert "".join(f["msg"] for f in frames if f["status"] == "stream") == "어서 오세요!"


async def test_a_key_bound_to_one_user_ignores_the_claimed_user_id(
    serving: Any, mem: Memento
) -> None:
    recorder = Recorder()
    space = Space("kiosk", chat_graph(fake_model("네."), recorder), user_id="kiosk-7")
    mem.remember("Kiosk 7 is at gate B.", scope=Scope(user_id="kiosk-7"), hotwords=["게이트"])
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        frames = await turn(ws, request(user_id="anyone", msg="게이트 어디?"))
    assert [f["hotword"] for f in frames if f["status"] == "hotword_detected"] == ["게이트"]
