"""The packages as a new user gets them: wheels of this checkout installed into a fresh virtual
environment with plain ``pip install`` — no ``constraints.txt`` — then used offline.

Slow (it builds wheels and resolves chromadb's and LangGraph's dependencies from the package
index): ``.venv/bin/python -m pytest tests/packaging -m slow``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memento-minilm-onnx", "memento-core", "memento-langgraph")
INSTALL_SECONDS = 1800
"""Guards against a hung pip, not a timing assertion."""


def _build(package: str, outdir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(outdir),
         str(ROOT / "packages" / package)],
        capture_output=True, text=True, timeout=INSTALL_SECONDS, check=False,
        env={**os.environ, **env},
    )  # fmt: skip


def _user_env(home: Path) -> dict[str, str]:
    """A user's shell: offline model loading, no repository constraints, a home of its own."""
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_CONSTRAINT", "VIRTUAL_ENV")}
    env.update(
        HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False", HOME=str(home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )  # fmt: skip
    env.pop("MEMENTO_PATH", None)
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("clean-install")
    wheels = root / "wheels"
    for package in PACKAGES:
        built = _build(package, wheels)
        assert built.returncode == 0, built.stderr[-3000:]
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         *map(str, sorted(wheels.glob("*.whl")))],
        capture_output=True, text=True, timeout=INSTALL_SECONDS, check=False,
        env=_user_env(root / "home"),
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    yield venv


def test_the_default_install_has_no_torch_and_no_cuda(venv: Path) -> None:
    probe = (
        "import json, importlib.metadata as m; "
        "print(json.dumps([d.metadata['Name'].lower() for d in m.distributions()]))"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, check=True
    )
    names = set(json.loads(done.stdout))
    assert {"memento-core", "memento-langgraph", "memento-minilm-onnx", "onnxruntime"} <= names
    assert "torch" not in names and "sentence-transformers" not in names
    assert not [n for n in names if n.startswith("nvidia")]


def test_the_quickstart_runs_offline(venv: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(venv / "bin" / "python"), str(ROOT / "examples" / "quickstart.py")],
        capture_output=True, text=True, timeout=INSTALL_SECONDS, check=False, cwd=tmp_path,
        env=_user_env(tmp_path / "home"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Export:" in done.stdout and "memories" in done.stdout
    assert not [p.name for p in tmp_path.iterdir() if p.name != "home"]  # nothing in its cwd


def test_the_command_remembers_into_the_per_user_directory(venv: Path, tmp_path: Path) -> None:
    env = _user_env(tmp_path / "home")
    command = str(venv / "bin" / "memento-core")
    version = subprocess.run([command, "--version"], capture_output=True, text=True, env=env)
    assert version.returncode == 0 and version.stdout.startswith("memento-core ")
    looked = subprocess.run([command, "stats"], capture_output=True, text=True, env=env)
    assert looked.returncode == 2 and "no Memento store at" in looked.stderr
    assert not (tmp_path / "home" / ".local" / "share" / "memento").exists()
    remembered = subprocess.run(
        [command, "remember", "Alice takes her coffee black.", "--user", "alice"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=INSTALL_SECONDS,
    )  # fmt: skip
    assert remembered.returncode == 0, remembered.stderr
    assert (tmp_path / "home" / ".local" / "share" / "memento" / "chroma.sqlite3").is_file()
    recalled = subprocess.run(
        [command, "recall", "coffee", "--user", "alice", "--json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=INSTALL_SECONDS,
    )  # fmt: skip
    assert recalled.returncode == 0 and "coffee black" in recalled.stdout


def test_without_a_compiler_the_build_says_so_and_the_wheel_is_pure(tmp_path: Path) -> None:
    built = _build("memento-core", tmp_path, CC="false")
    assert built.returncode == 0, built.stderr[-3000:]
    said = built.stdout + built.stderr
    assert "WARNING: the hotword detector's C fast path (memento_core._hotfeed) was" in said
    assert "exited with status 1" in said and "apt install gcc python3-dev" in said
    (wheel,) = tmp_path.glob("*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if "_hotfeed" in n and n.endswith(".so")]


def test_the_default_install_carries_one_model_and_int8_is_an_extra(
    venv: Path, tmp_path: Path
) -> None:
    """The default model package holds the fp32 model only; the int8 export is the wheel of
    ``memento-minilm-onnx-int8`` (``memento-core[int8]``), built from the same file."""
    for package in ("memento-minilm-onnx", "memento-minilm-onnx-int8"):
        built = _build(package, tmp_path)
        assert built.returncode == 0, built.stderr[-3000:]
    (default,) = tmp_path.glob("memento_minilm_onnx-*.whl")
    (int8,) = tmp_path.glob("memento_minilm_onnx_int8-*.whl")
    models = [n for n in zipfile.ZipFile(default).namelist() if n.endswith(".onnx")]
    assert models == ["memento_minilm_onnx/model.onnx"]
    assert "memento_minilm_onnx_int8/model-int8.onnx" in zipfile.ZipFile(int8).namelist()
    probe = (
        "from memento_core import OnnxEmbedder\n"
        "try:\n"
        "    OnnxEmbedder('all-MiniLM-L6-v2-int8').embed_query('coffee')\n"
        "except ImportError as err:\n"
        "    print(err)\n"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        capture_output=True, text=True, check=True, env=_user_env(tmp_path / "home"),
    )  # fmt: skip
    assert "memento-core[int8]" in done.stdout
