"""Per-shard indexes of the embedding cache: a run reads the rows it needs, not every shard.

A large suite leaves tens of thousands of vectors in its cache; a small run beside it needs a
few hundred. Reading every shard whole (and checking every vector) made that small run pay for
the big one in time and memory. Each shard ``<id>.npz`` may have a sidecar ``<id>.idx``: the
shard's keys reduced to sorted 64-bit prefixes, their rows, and where the ``keys`` and
``vectors`` arrays start inside the (uncompressed) archive. A lookup binary-searches the
prefixes and ``pread``s each candidate's key and vector straight from the shard; the full key
read back must match, so a stale or damaged sidecar can only cost a whole read, never a wrong
vector.

The shards keep their format: a reader without indexes reads them whole, as before.
"""

from __future__ import annotations

import contextlib
import os
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalspec._util.files import atomic_write
from evalspec._util.numpy_import import import_numpy

if TYPE_CHECKING:
    import numpy as np
else:
    np = import_numpy()

INDEX_SUFFIX = ".idx"
_KEY_WIDTH = 64
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length


class StaleIndex(Exception):
    """The sidecar does not describe its shard (any more): read the shard whole instead."""


def index_path(shard: Path) -> Path:
    return shard.with_suffix(INDEX_SUFFIX)


def key_prefixes(keys: list[bytes]) -> np.ndarray:
    """The first 16 hex digits of each key as an unsigned 64-bit number (sort order kept)."""
    return np.array([int(key[:16], 16) for key in keys], dtype=np.uint64)


def _member_data_offset(handle: zipfile.ZipFile, raw: object, member: str) -> int:
    """Where `member`'s .npy bytes start in the archive; only stored (uncompressed) members."""
    info = handle.getinfo(member)
    if info.compress_type != zipfile.ZIP_STORED:
        raise StaleIndex(f"{member} is compressed")
    assert hasattr(raw, "seek") and hasattr(raw, "read")
    raw.seek(info.header_offset)
    signature, name_len, extra_len = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
    if signature != b"PK\x03\x04":
        raise StaleIndex("not a zip local header")
    return int(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)


def _array_offset(raw: object, start: int) -> tuple[int, tuple[int, ...], np.dtype]:
    """Offset of the array data of the .npy file at `start`, with its shape and dtype."""
    assert hasattr(raw, "seek") and hasattr(raw, "tell")
    raw.seek(start)
    version = np.lib.format.read_magic(raw)  # type: ignore[arg-type]
    reader = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    shape, fortran, dtype = reader(raw)  # type: ignore[arg-type]
    if fortran:
        raise StaleIndex("Fortran-ordered array")
    return int(raw.tell()), tuple(shape), dtype


def write_index(shard: Path, keys: np.ndarray) -> None:
    """Write `shard`'s sidecar (best effort: a shard without one is read whole)."""
    try:
        with shard.open("rb") as raw, zipfile.ZipFile(raw) as archive:
            keys_at, key_shape, _ = _array_offset(
                raw, _member_data_offset(archive, raw, "keys.npy")
            )
            vectors_at, vec_shape, _ = _array_offset(
                raw, _member_data_offset(archive, raw, "vectors.npy")
            )
        prefixes = key_prefixes(keys.tolist())
        order = np.argsort(prefixes, kind="stable")
        layout = np.array(
            [os.path.getsize(shard), keys_at, vectors_at, key_shape[0], vec_shape[1]],
            dtype=np.int64,
        )
        with atomic_write(index_path(shard), binary=True) as handle:
            np.savez(handle, prefixes=prefixes[order], rows=order.astype(np.int64), layout=layout)
    except (OSError, ValueError, StaleIndex, zipfile.BadZipFile, IndexError):
        return


@dataclass
class ShardIndex:
    """One shard's sidecar, loaded: enough to find and read any of its rows."""

    shard: Path
    prefixes: np.ndarray
    rows: np.ndarray
    keys_at: int
    vectors_at: int
    count: int
    dim: int

    def lookup(self, keys: list[bytes]) -> tuple[list[bytes], np.ndarray]:
        """The keys of `keys` this shard holds and their vectors (rows read with `pread`).

        StaleIndex if a row read back is not the key the index promised, or not finite."""
        wanted = key_prefixes(keys)
        left = np.searchsorted(self.prefixes, wanted, side="left")
        right = np.searchsorted(self.prefixes, wanted, side="right")
        found: list[bytes] = []
        vectors: list[np.ndarray] = []
        try:
            fd = os.open(self.shard, os.O_RDONLY)
        except OSError as exc:
            raise StaleIndex(str(exc)) from exc
        try:
            for key, lo, hi in zip(keys, left.tolist(), right.tolist(), strict=True):
                if lo == hi:
                    continue
                vector = self._first_match(fd, key, self.rows[lo:hi].tolist())
                found.append(key)
                vectors.append(vector)
        finally:
            os.close(fd)
        if not found:
            return [], np.zeros((0, self.dim), dtype=np.float32)
        return found, np.stack(vectors)

    def _first_match(self, fd: int, key: bytes, rows: list[int]) -> np.ndarray:
        """The vector of `key` among rows sharing its prefix; a prefix whose rows hold no such
        key means the index lies (two keys sharing 64 bits is not worth planning for)."""
        for row in rows:
            vector = self._row(fd, row, key)
            if vector is not None:
                return vector
        raise StaleIndex("the index points at another key")

    def _row(self, fd: int, row: int, key: bytes) -> np.ndarray | None:
        if os.pread(fd, _KEY_WIDTH, self.keys_at + row * _KEY_WIDTH).rstrip(b"\0") != key:
            return None  # another key with the same prefix
        width = self.dim * 4
        data = os.pread(fd, width, self.vectors_at + row * width)
        if len(data) != width:
            raise StaleIndex("short read")
        vector = np.frombuffer(data, dtype="<f4")
        if not np.isfinite(vector).all():
            raise StaleIndex("a vector that is not finite")
        return vector


def load_index(shard: Path) -> ShardIndex | None:
    """`shard`'s sidecar if it exists and fits the shard as it is on disk, else None."""
    try:
        with np.load(index_path(shard), allow_pickle=False) as data:
            prefixes, rows, layout = data["prefixes"], data["rows"], data["layout"]
        size, keys_at, vectors_at, count, dim = (int(v) for v in layout.tolist())
        if (
            prefixes.dtype != np.uint64
            or len(prefixes) != count
            or len(rows) != count
            or size != os.path.getsize(shard)
            or (count and (rows.min() < 0 or rows.max() >= count))
            or (count > 1 and bool((prefixes[1:] < prefixes[:-1]).any()))
        ):
            raise ValueError("index does not fit its shard")
    except FileNotFoundError:
        return None
    except Exception:
        remove_index(shard)
        return None
    return ShardIndex(shard, prefixes, rows, keys_at, vectors_at, count, dim)


def remove_index(shard: Path) -> None:
    with contextlib.suppress(OSError):
        index_path(shard).unlink()
