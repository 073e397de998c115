"""The memento-inspector distribution: what its wheel holds and needs, its command line, its
public names."""

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

import memento_inspector
from memento_inspector.cli import build_parser

PACKAGE = Path(__file__).resolve().parents[2] / "packages" / "memento-inspector"


def test_the_wheel_holds_templates_and_script_and_needs_no_framework(tmp_path: Path) -> None:
    offline = ["--no-build-isolation"] if importlib.util.find_spec("hatchling") else []
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *offline,
         "--wheel-dir", str(tmp_path), str(PACKAGE)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("memento_inspector-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = Parser().parsestr(
            archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        )
        entry_points = archive.read(
            next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        ).decode()
    assert metadata["Name"] == "memento-inspector" and metadata["License-Expression"] == "MIT"
    assert metadata["Version"] == memento_inspector.__version__
    required = {
        canonicalize_name(Requirement(r).name) for r in metadata.get_all("Requires-Dist") or []
    }
    assert required == {
        "memento-core", "numpy", "starlette", "uvicorn", "jinja2", "python-multipart",
    }  # fmt: skip
    for name in ("py.typed", "templates/base.html", "templates/memory.html",
                 "static/inspector.js", "static/inspector.css"):  # fmt: skip
        assert f"memento_inspector/{name}" in names
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert "memento-inspector = memento_inspector.cli:main" in entry_points


def test_the_command_line_takes_the_documented_options() -> None:
    args = build_parser().parse_args(
        ["--path", "store", "--user", "alice", "--port", "0", "--read-only"]
    )
    assert (args.user, args.port, args.read_only, args.host) == ("alice", 0, True, "127.0.0.1")
    assert not args.no_token
    assert build_parser().parse_args(["--user", "alice", "--no-token"]).no_token
    result = subprocess.run(
        [sys.executable, "-m", "memento_inspector", "--path", "a", "--url", "http://x"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "not allowed with argument" in result.stderr


def test_a_missing_store_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    result = subprocess.run(
        [sys.executable, "-m", "memento_inspector", "--path", str(missing), "--read-only"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and "no Memento store" in result.stderr
    assert not missing.exists()


def test_all_is_sorted_and_names_every_public_object() -> None:
    exported = memento_inspector.__all__
    assert exported == sorted(exported)
    public = {
        name
        for name, value in vars(memento_inspector).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public | {"__version__"} == set(exported)


def test_the_command_prints_a_token_every_request_needs(tmp_path: Path) -> None:
    """The real command on a free port: the address it prints carries the one-time token."""
    import os
    import urllib.error
    import urllib.request

    from memento_core import Memento, Scope

    store = tmp_path / "store"
    with Memento.open(store) as mem:
        cello = mem.remember("Dana plays the cello.", scope=Scope(user_id="dana"))
        before = mem.get(cello)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "memento_inspector", "--path", str(store), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # blocks until the server has bound its port
        assert "as the store's owner" in line and "?token=" in line, line
        address = line.split()[-1]
        base, token = address.split("?token=")

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: object, **kwargs: object) -> None:
                return None

        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(base, timeout=30)
            raise AssertionError("a request without the token was served")
        except urllib.error.HTTPError as refused:
            assert refused.code == 401
        try:
            opener.open(address, timeout=30)
            raise AssertionError("the token was not exchanged for a cookie")
        except urllib.error.HTTPError as moved:
            assert moved.code == 303 and token in moved.headers["set-cookie"]
        request = urllib.request.Request(f"{base}memories", headers={"X-Memento-Token": token})
        with opener.open(request, timeout=60) as page:
            assert "Dana plays the cello." in page.read().decode()
        search = urllib.request.Request(
            f"{base}search?q=cello&as_user=dana", headers={"X-Memento-Token": token}
        )
        with opener.open(search, timeout=60) as page:
            assert cello in page.read().decode()
    finally:
        server.terminate()
        server.wait(timeout=30)
    with Memento.open(store) as mem:  # looking is not an access: nothing moved
        after = mem.get(cello)
    assert after.last_accessed_at == before.last_accessed_at
    assert after.expires_at == before.expires_at
