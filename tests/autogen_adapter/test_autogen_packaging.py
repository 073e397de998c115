"""The memento-autogen distribution: its dependencies, its public names, its import cost."""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import memento_autogen

PACKAGE = Path(__file__).resolve().parents[2] / "packages" / "memento-autogen"


def test_the_wheel_requires_core_and_autogen_and_no_other_framework(tmp_path: Path) -> None:
    # With hatchling installed the build needs no network; without it pip fetches it.
    offline = ["--no-build-isolation"] if importlib.util.find_spec("hatchling") else []
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *offline,
         "--wheel-dir", str(tmp_path), str(PACKAGE)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("memento_autogen-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata_path = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(metadata_path).decode())
    assert metadata["Name"] == "memento-autogen"
    required = {
        canonicalize_name(Requirement(r).name) for r in metadata.get_all("Requires-Dist") or []
    }
    assert required == {"memento-core", "autogen-core", "autogen-agentchat"}
    assert not any(
        name.startswith(("langgraph", "langchain", "llama-index", "autogen-ext"))
        for name in required
    )
    assert "memento_autogen/py.typed" in names


def test_all_is_sorted_and_names_every_public_object() -> None:
    exported = memento_autogen.__all__
    assert exported == sorted(exported)
    for (
        name
    ) in memento_autogen.__all__:  # names load on first use (the plugin imports no framework)
        getattr(memento_autogen, name)
    public = {
        name
        for name, value in vars(memento_autogen).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public | {"__version__"} == set(exported)


def test_importing_the_adapter_loads_no_other_framework_and_no_model() -> None:
    code = (
        "import sys, memento_autogen; "
        "print(' '.join(m for m in ('langgraph', 'llama_index', 'torch', 'chromadb') "
        "if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.split()
    assert loaded == []
