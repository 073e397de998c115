"""memento-langgraph as a package: its public names, its wheel, what importing it pulls in."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import memento_langgraph

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "packages" / "memento-langgraph"


def test_all_lists_every_public_name_and_only_those() -> None:
    for (
        name
    ) in memento_langgraph.__all__:  # names load on first use (the plugin imports no framework)
        getattr(memento_langgraph, name)
    public = {
        name
        for name, value in vars(memento_langgraph).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert set(memento_langgraph.__all__) - {"__version__"} == public
    assert len(memento_langgraph.__all__) == len(set(memento_langgraph.__all__))
    for name in memento_langgraph.__all__:
        assert getattr(memento_langgraph, name) is not None


def test_the_wheel_needs_core_and_langgraph_but_no_other_framework(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path)],
        cwd=PACKAGE,
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("memento_langgraph-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [metadata_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode("utf-8"))

    required = [r for r in metadata.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert metadata["Name"] == "memento-langgraph"
    assert sorted(r.split(";")[0].replace(" ", "") for r in required) == [
        "langgraph-checkpoint>=4",
        "langgraph>=1.2",
        "memento-core<0.2,>=0.1",
    ]
    every_requirement = " ".join(metadata.get_all("Requires-Dist") or []).lower()
    assert "llama" not in every_requirement and "autogen" not in every_requirement
    assert "memento_langgraph/py.typed" in names
    assert "memento_langgraph/__init__.py" in names
    assert not any(n.startswith(("tests/", "memento_core/")) for n in names)


def test_importing_the_adapter_loads_no_other_framework_and_no_model() -> None:
    code = (
        "import sys, memento_langgraph\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'llama_index', 'autogen_core', 'autogen_agentchat', 'autogen_ext', 'torch', "
        "'sentence_transformers', 'chromadb'})\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    )
    assert result.stdout.strip() == ""


@pytest.mark.slow
def test_the_example_runs_offline_and_remembers_across_threads() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "langgraph_agent.py")],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "MEMENTO_CHAT_MODEL": ""},
    )
    assert result.returncode == 0, result.stderr
    assert "From what you told me before:" in result.stdout
    assert "Porto" in result.stdout.split("With Memento")[1]
