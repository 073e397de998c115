"""Memento over MCP: an MCP client starts the Memento MCP server (the `memento-mcp-server`
command, here as `python -m memento_mcp`) over stdio and uses its memory.

This is what Claude Desktop or Cursor do with the configuration in packages/memento-mcp/README.md:
the server acts for one user (`--user alice`), whatever the client asks.

    HF_HUB_OFFLINE=1 .venv/bin/python examples/mcp_client.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from mcp import Client, StdioServerParameters

FACTS = [
    ("Alice's flight to Lisbon leaves on 14 March at 07:40.", ["travel"]),
    ("Alice prefers aisle seats and never checks a bag.", ["travel", "pref"]),
    ("Alice's dentist appointment moved to Thursday.", ["health"]),
]


async def main() -> int:
    with tempfile.TemporaryDirectory(prefix="memento-mcp-") as tmp:
        server = StdioServerParameters(
            command=sys.executable,
            args=["-m", "memento_mcp", "--path", str(Path(tmp) / "memory"), "--user", "alice"],
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        async with Client(server) as client:
            tools = await client.list_tools()
            print("tools:", ", ".join(sorted(tool.name for tool in tools.tools)))

            for content, tags in FACTS:
                stored = await client.call_tool("remember", {"content": content, "tags": tags})
                print("remembered", (stored.structured_content or {}).get("memory_id", "?")[:12])

            found = await client.call_tool("recall", {"query": "when is my flight?", "limit": 2})
            hits = (found.structured_content or {}).get("items", [])
            print("\nrecall 'when is my flight?':")
            for hit in hits:
                print(f"  {hit['score']:.3f}  {hit['snippet']}")

            best = hits[0]["uri"]
            resource = await client.read_resource(best)
            print(f"\n{best} is a JSON resource of {len(resource.contents[0].text)} characters")

            prompt = await client.get_prompt(
                "memory_injection", {"query": "plan my trip", "token_budget": "200"}
            )
            print("\nmemory_injection prompt:")
            print("  " + str(prompt.messages[0].content.text).replace("\n", "\n  "))
            return 0 if hits and "Lisbon" in hits[0]["snippet"] else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
