"""MementoMemory as an AutoGen component: JSON config, dump_component / load_component."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from _autogen_support import ALICE, text
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent
from autogen_core.memory import Memory
from autogen_ext.models.replay import ReplayChatCompletionClient
from pydantic import ValidationError

from memento_autogen import MementoMemory, MementoMemoryConfig
from memento_core import Embedder, InvalidInput, Memento


def through_json(model: Any) -> dict[str, Any]:
    """What a config file holds: the dumped component, written and read back as JSON text."""
    result: dict[str, Any] = json.loads(model.model_dump_json())
    return result


def test_the_config_round_trips_under_a_public_provider(tmp_path: Path) -> None:
    config = MementoMemoryConfig(
        path=str(tmp_path / "memory"),
        collection_prefix="agents",
        embedding_model="all-MiniLM-L6-v2",
        **ALICE,
        project_id="apollo",
        session_id="chat-1",
        privacy="team",
        memory_type="episodic",
        k=7,
        score_threshold=0.25,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an internal provider path would warn
        dumped = through_json(MementoMemory(config).dump_component())
    assert dumped["provider"] == "memento_autogen.MementoMemory"
    assert dumped["component_type"] == "memory"
    loaded = Memory.load_component(dumped)
    assert isinstance(loaded, MementoMemory)
    assert loaded.config == config
    assert loaded.scope.as_dict() == {**ALICE, "project_id": "apollo", "session_id": "chat-1"}


def test_a_store_passed_in_fills_in_location_and_model(mem: Memento) -> None:
    dumped = MementoMemory(MementoMemoryConfig(**ALICE), store=mem).dump_component().config
    where = "url" if "://" in mem.location else "path"
    assert dumped[where] == mem.location
    assert dumped["embedding_model"] == mem.embedder.name


def test_a_config_that_contradicts_the_store_is_refused(mem: Memento, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="store"):
        MementoMemory(MementoMemoryConfig(**ALICE, path=str(tmp_path / "elsewhere")), store=mem)
    with pytest.raises(InvalidInput, match="store"):
        MementoMemory(MementoMemoryConfig(**ALICE, url="http://127.0.0.1:9"), store=mem)
    with pytest.raises(InvalidInput, match="embedding model"):
        MementoMemory(MementoMemoryConfig(**ALICE, embedding_model="all-mpnet-base-v2"), store=mem)


@pytest.mark.parametrize(
    "fields",
    [
        {"path": "/tmp/a", "url": "http://127.0.0.1:8000"},
        {"k": 0},
        {"score_threshold": 1.5},
        {"privacy": "secret"},
        {"memory_type": "dream"},
        {"distance_metric": "cosine"},
    ],
)
def test_a_bad_config_is_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        MementoMemoryConfig.model_validate({"user_id": "alice", **fields})


async def test_an_agent_with_memento_memory_round_trips_and_still_remembers(
    embedder: Embedder, tmp_path: Path
) -> None:
    store_path = tmp_path / "memory"
    with Memento.open(store_path, embedder=embedder) as store:
        memory = MementoMemory(MementoMemoryConfig(**ALICE, k=3), store=store)
        await memory.add(text("Alice drinks green tea every morning"))
        await memory.add(text("The billing service runs on MariaDB 10.6"))
        agent = AssistantAgent(
            "assistant",
            model_client=ReplayChatCompletionClient(["Green tea."]),
            memory=[memory],
            system_message="You are Alice's assistant.",
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            dumped = through_json(agent.dump_component())

    (memory_config,) = dumped["config"]["memory"]
    assert memory_config["provider"] == "memento_autogen.MementoMemory"
    assert memory_config["config"]["path"] == str(store_path)

    # Loading builds a memory that opens the store itself, with its own copy of the model.
    loaded = AssistantAgent.load_component(dumped)
    assert through_json(loaded.dump_component()) == dumped
    result = await loaded.run(task="What does Alice drink?")
    (event,) = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert event.content[0].content == "Alice drinks green tea every morning"
