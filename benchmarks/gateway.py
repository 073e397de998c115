"""Gateway benchmark: what the sendmsg gateway adds to each streamed chunk, and its frame rate.

1. **Added latency per stream frame.** One room; a LangGraph graph whose model (LangChain's
   ``FakeListChatModel``) streams one character every ``--interval-ms``, the model's own chunk
   rate. A callback notes when the model produces each chunk (``on_llm_new_token``); a real
   WebSocket client on loopback notes when the matching ``stream`` frame arrives. The difference
   is everything the gateway adds: LangGraph's event stream, hotword detection (the reply
   mentions memories' hotwords, so frames are held and interleaved as they would be), sentence
   cutting, JSON, the socket and the client's own parsing. p50/p99 over every frame of
   ``--rounds`` turns; target p99 ≤ 1 ms.
2. **Frames per second with many rooms.** ``--rooms`` clients at once, one connection and room
   each, ``--turns`` turns each, the model streaming as fast as it can. Frames per second over
   the stream phase (first to last stream frame) and over whole turns (history, recall, hotword
   detector, saving included). Clients run in the same process and event loop as the gateway,
   so the rates are a lower bound for the gateway alone.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/gateway.py [--quick] [--out DIR]

Results: ``benchmarks/results/gateway.{json,md}``. Wall-clock on whatever else the machine is
doing; the load average is recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    RESULTS,
    arguments,
    latency_summary,
    load_average,
    machine,
    offline_single_thread,
    peak_rss_mb,
    write_report,
)
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import START, MessagesState, StateGraph
from websockets.asyncio.client import connect

from memento_core import Memento
from memento_gateway import MAX_FRAME_BYTES, Gateway, Space, StaticKeys

KEY = "bench-key"
P99_TARGET_MS = 1.0
REPLY = (
    "도손 해변은 하이퐁에서 남동쪽으로 20킬로미터 떨어져 있어요. 조말론 매장은 3층에 있고, "
    "34번가 플래그십 매장도 가까워요. 주말에는 사람이 많으니 아침 일찍 가 보세요. "
)


class ChunkClock(AsyncCallbackHandler):
    """When the model produced each chunk (perf_counter seconds)."""

    run_inline = True

    def __init__(self) -> None:
        self.times: list[float] = []

    async def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        self.times.append(time.perf_counter())


def graph_for(model: Any) -> Any:
    async def chatbot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("chatbot", chatbot)
    builder.add_edge(START, "chatbot")
    return builder.compile()


def seed(mem: Memento, space: Space, users: list[str]) -> None:
    for user in users:
        scope = space.scope_for(user)
        mem.remember("Do Son is 20 km from Hai Phong.", scope=scope, hotwords=["도손"],
                     data={"km": 20})  # fmt: skip
        mem.remember("Jo Malone is on floor 3.", scope=scope, hotwords=["조말론", "Jo Malone"])
        mem.remember("The flagship is on 34th Street.", scope=scope, hotwords=["34번가"])


def request(room: str, user: str, msg: str) -> str:
    fields = {"action": "sendmsg", "room_uid": room, "user_id": user, "msg": msg, "api_key": KEY}
    return json.dumps(fields, ensure_ascii=False)


async def one_turn(ws: Any, raw: str) -> list[tuple[float, dict[str, Any]]]:
    """The frames of one turn, each with the time it arrived."""
    await ws.send(raw)
    frames: list[tuple[float, dict[str, Any]]] = []
    while True:
        text = await ws.recv()
        arrived = time.perf_counter()
        frame = json.loads(text)
        frames.append((arrived, frame))
        if frame.get("status") == "END":
            return frames


async def added_latency(
    mem: Memento, *, chars: int, interval_ms: float, rounds: int, hotwords: bool
) -> dict[str, Any]:
    reply = (REPLY * (chars // len(REPLY) + 1))[:chars]
    clock = ChunkClock()
    model = FakeListChatModel(responses=[reply], sleep=interval_ms / 1000, callbacks=[clock])
    space = Space("bench", graph_for(model), recall_budget=0)
    user = "hotword-user" if hotwords else "plain-user"
    if hotwords:
        seed(mem, space, [user])
    gateway = Gateway(mem, StaticKeys({KEY: space}))
    added_ms: list[float] = []
    hotword_frames = 0
    async with await gateway.serve("127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}", max_size=MAX_FRAME_BYTES) as ws:
            for number in range(rounds):
                clock.times.clear()
                frames = await one_turn(ws, request(f"latency-{number}", user, "안내"))
                streams = [t for t, f in frames if f["status"] == "stream"]
                hotword_frames += sum(f["status"] == "hotword_detected" for _, f in frames)
                if len(streams) != len(clock.times):
                    raise RuntimeError(f"{len(streams)} frames for {len(clock.times)} chunks")
                added_ms += [(got - made) * 1000 for got, made in zip(streams, clock.times)]
    return {
        "chunks_per_round": chars,
        "rounds": rounds,
        "model_interval_ms": interval_ms,
        "hotword_frames": hotword_frames,
        "added_ms": latency_summary(added_ms, 3),
        "target_p99_ms": P99_TARGET_MS,
        "met": latency_summary(added_ms, 3)["p99"] <= P99_TARGET_MS,
    }


async def many_rooms(mem: Memento, *, rooms: int, turns: int, chars: int) -> dict[str, Any]:
    reply = (REPLY * (chars // len(REPLY) + 1))[:chars]
    space = Space("bench", graph_for(FakeListChatModel(responses=[reply])))
    users = [f"user-{n}" for n in range(rooms)]
    seed(mem, space, users)
    gateway = Gateway(mem, StaticKeys({KEY: space}))
    async with await gateway.serve("127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]

        async def client(user: str) -> list[tuple[float, dict[str, Any]]]:
            frames: list[tuple[float, dict[str, Any]]] = []
            async with connect(f"ws://127.0.0.1:{port}", max_size=MAX_FRAME_BYTES) as ws:
                for turn in range(turns):
                    frames += await one_turn(ws, request(f"room-{user}", user, f"질문 {turn}"))
            return frames

        started = time.perf_counter()
        results = await asyncio.gather(*(client(user) for user in users))
        wall = time.perf_counter() - started
    everything = [item for frames in results for item in frames]
    streams = [t for t, f in everything if f["status"] == "stream"]
    stream_phase = max(streams) - min(streams)
    return {
        "rooms": rooms,
        "turns_per_room": turns,
        "reply_chars": chars,
        "stream_frames": len(streams),
        "all_frames": len(everything),
        "wall_s": round(wall, 2),
        "stream_phase_s": round(stream_phase, 2),
        "stream_frames_per_s": round(len(streams) / stream_phase, 1),
        "frames_per_s_whole_turns": round(len(everything) / wall, 1),
        "turns_per_s": round(rooms * turns / wall, 2),
    }


def markdown(report: dict[str, Any]) -> str:
    lat, rooms = report["latency"], report["rooms"]
    added, plain = lat["added_ms"], report["latency_without_hotwords"]["added_ms"]
    return "\n".join(
        [
            "# Gateway benchmark (`benchmarks/gateway.py`)",
            "",
            f"Run {report['finished_at']}, load average {report['load_average']}. "
            f"Command: `{report['command']}`.",
            "",
            "## Added latency per stream frame",
            "",
            f"The model streams one character every {lat['model_interval_ms']} ms; "
            f"{lat['rounds']} turns of {lat['chunks_per_round']} chunks, the reply mentioning "
            f"hotwords ({lat['hotword_frames']} `hotword_detected` frames interleaved).",
            "",
            "| added per frame | p50 | p95 | p99 | max | target p99 |",
            "|---|---:|---:|---:|---:|---:|",
            f"| ms | {added['p50']} | {added['p95']} | {added['p99']} | {added['max']} | "
            f"≤ {lat['target_p99_ms']} ({'met' if lat['met'] else 'missed'}) |",
            f"| ms, no hotword memories | {plain['p50']} | {plain['p95']} | {plain['p99']} | "
            f"{plain['max']} | |",
            "",
            "## Many rooms at once",
            "",
            f"{rooms['rooms']} connections, one room each, {rooms['turns_per_room']} turn(s) "
            f"each, replies of {rooms['reply_chars']} one-character chunks, the model as fast "
            "as it goes; clients in the same process and event loop.",
            "",
            "| stream frames | stream frames/s (stream phase) | all frames/s (whole turns) "
            "| turns/s | wall s |",
            "|---:|---:|---:|---:|---:|",
            f"| {rooms['stream_frames']:,} | {rooms['stream_frames_per_s']:,} | "
            f"{rooms['frames_per_s_whole_turns']:,} | {rooms['turns_per_s']} | "
            f"{rooms['wall_s']} |",
            "",
        ]
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memento-bench-gateway-") as root:
        mem = Memento.open(Path(root) / "store")
        mem.embedder.embed_query("warm up")  # load the model before anything is timed
        options = {"chars": args.chars, "interval_ms": args.interval_ms, "rounds": args.rounds}
        latency = await added_latency(mem, hotwords=True, **options)
        plain = await added_latency(mem, hotwords=False, **options)
        rooms = await many_rooms(mem, rooms=args.rooms, turns=args.turns, chars=args.room_chars)
        mem.close()
    return {"latency": latency, "latency_without_hotwords": plain, "rooms": rooms}


def main() -> None:
    offline_single_thread()  # before the embedding model loads (memento_core loads it lazily)
    parser = arguments(__doc__)
    parser.add_argument("--quick", action="store_true", help="a small run, to check the script")
    args = parser.parse_args()
    quick = args.quick
    args.chars, args.rounds, args.interval_ms = (120, 2, 5.0) if quick else (600, 5, 10.0)
    args.rooms, args.turns, args.room_chars = (10, 1, 100) if quick else (100, 3, 300)
    started = datetime.now(timezone.utc)
    load_start = load_average()
    report: dict[str, Any] = asyncio.run(run(args))
    report.update(
        {
            "started": started.isoformat(timespec="seconds"),
            "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "wall_seconds": round((datetime.now(timezone.utc) - started).total_seconds(), 1),
            "load_average": load_start,
            "quick": quick,
            "machine": machine(),
            "peak_rss_mb": peak_rss_mb(),
            "command": "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/gateway.py"
            + (" --quick" if quick else ""),
        }
    )
    text = markdown(report)
    out: Path = args.out
    if quick and out == RESULTS:  # a check run never overwrites the real figures
        out = Path(tempfile.mkdtemp(prefix="memento-bench-gateway-quick-"))
    write_report(out, "gateway", report, text)
    print(text)
    print(f"results: {out / 'gateway.json'}")


if __name__ == "__main__":
    main()
