"""Every example runs offline, as the README says, and prints what the README says to expect.

Each runs as its own process (``python examples/NAME.py``) in a scratch working directory, so an
example that wrote outside its temporary store would be noticed by nobody but this test's
``cwd`` — which is thrown away.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RUN_SECONDS = 600
"""A guard against a hung example, not a timing assertion."""

EXPECTED = {
    "quickstart.py": ["Opening an embedded store", "Export:", "memories"],
    "langgraph_agent.py": ["With Memento, the second thread knows", "Porto", "archived"],
    "autogen_agent.py": ["Session 2", "component config"],
    "llamaindex_agent.py": ["Session 1", "Session 2", "hotword event", "allergic to peanuts"],
    "mcp_client.py": ["tools:", "Lisbon", "memory_injection prompt"],
}


def _run(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "140"}
    env.pop("OPENAI_API_KEY", None)  # offline: the examples' fake or replay models
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
    )


def test_every_example_is_covered() -> None:
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    assert scripts - {"hotword_stream_server.py"} <= set(EXPECTED), "an example without a test"


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example_runs_offline(script: str, tmp_path: Path) -> None:
    if not (EXAMPLES / script).exists():
        pytest.fail(f"examples/{script} is listed in the README but missing")
    result = _run(script, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for expected in EXPECTED[script]:
        assert expected in result.stdout, f"{expected!r} not in the output of {script}"
    assert list(tmp_path.iterdir()) == [], "the example wrote into the working directory"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_hotword_server_example_serves_events(tmp_path: Path) -> None:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "hotword_stream_server.py"), "--port", str(port)],
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        assert banner.startswith(f"serving on ws://127.0.0.1:{port}"), banner

        async def converse() -> list[dict[str, object]]:
            async with connect(f"ws://127.0.0.1:{port}") as ws:
                request = {
                    "action": "sendmsg",
                    "room_uid": "r1",
                    "user_id": "demo",
                    "msg": "조말론 매장은 34번가에 있나요?",
                    "api_key": "demo-key",
                }
                await ws.send(json.dumps(request, ensure_ascii=False))
                events = []
                while not events or events[-1]["status"] != "END":
                    events.append(json.loads(await ws.recv()))
                return events

        events = asyncio.run(asyncio.wait_for(converse(), RUN_SECONDS))
    finally:
        server.terminate()
        server.wait(timeout=30)
    statuses = [e["status"] for e in events]
    assert statuses[0] == "START" and statuses[-1] == "END" and events[-1]["msg"] == ""
    assert "think" in statuses and "stream" in statuses
    detected = {e["hotword"] for e in events if e["status"] == "hotword_detected"}
    assert {"조말론", "34번가"} <= detected
    payloads = [json.loads(e["msg"]) for e in events if e["status"] == "memory_dict"]
    assert {"k": "floor", "v": 3} in payloads[0]
