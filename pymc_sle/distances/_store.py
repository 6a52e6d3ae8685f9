"""A directory of finished distance blocks that survives Ctrl-C and SIGKILL, and trusts nothing
it reads back.

Layout::

    store/
      manifest.json          what is being computed (metric identity, hashes of items/rows/cols,
                             shape, ...), written once, before any block
      blocks.jsonl           the manifest's ledger of finished blocks: one JSON line per block
                             with its key, shape, dtype and SHA-256, appended after the block
      chunk_00003_00007.npy  one finished block each, written to a temporary file and renamed

A block file either exists whole or not at all (``os.replace`` is atomic on POSIX and Windows),
and it counts as finished only once its ledger line is on disk, so an interrupted run leaves only
finished blocks, perhaps a stray temporary file (ignored and overwritten) and perhaps a torn last
ledger line (ignored: that block is computed again). On reuse every block is checked against its
ledger line -- content hash, shape, dtype, finite non-negative values, no pickles -- and one that
fails is reported with a warning naming the file and computed again, never used. A directory
with blocks but no manifest, an unreadable manifest, or a manifest for a different computation
is refused.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import uuid
import warnings
from pathlib import Path

import numpy as np

__all__ = ["ChunkStore", "StoreWarning"]

_MANIFEST, _LEDGER = "manifest.json", "blocks.jsonl"


class StoreWarning(UserWarning):
    """A block of a distance store failed verification and is computed again."""


def _atomic_write(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


class ChunkStore:
    """Finished blocks of one pairwise computation, identified by its ``manifest``.

    Raises
    ------
    ValueError
        If ``directory`` holds a different computation, an unreadable manifest, or blocks
        without a manifest (what they hold cannot be told).
    """

    def __init__(self, directory: str | os.PathLike, manifest: dict):
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise ValueError(f"`store` must be a directory, but {self.directory} is a file")
        self.directory.mkdir(parents=True, exist_ok=True)
        manifest_path = self.directory / _MANIFEST
        if manifest_path.exists():
            self._check_manifest(manifest_path, manifest)
        else:
            leftovers = sorted(p.name for p in self.directory.glob("chunk_*_*.npy"))
            if leftovers or (self.directory / _LEDGER).exists():
                raise ValueError(
                    f"`store` {self.directory} holds blocks ({', '.join(leftovers[:3]) or _LEDGER}"
                    f"{', ...' if len(leftovers) > 3 else ''}) but no {_MANIFEST}, so what they "
                    "hold cannot be told. Use a new directory, or delete this one to start over."
                )
            text = json.dumps(manifest, indent=2, sort_keys=True).encode()
            _atomic_write(manifest_path, text)
        self._ledger = self._read_ledger()

    def _check_manifest(self, path: Path, manifest: dict) -> None:
        try:
            stored = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(
                f"`store` {self.directory}: {path.name} is not a readable manifest ({err}). "
                "Use a new directory, or delete this one to start over."
            ) from err
        if not isinstance(stored, dict):
            raise ValueError(
                f"`store` {self.directory}: {path.name} must hold a JSON object, but holds "
                f"{type(stored).__name__}. Use a new directory, or delete this one."
            )
        keys = set(stored) | set(manifest)
        differing = sorted(k for k in keys if stored.get(k) != manifest.get(k))
        if differing:
            details = "; ".join(
                f"{k}: stored {stored.get(k)!r}, requested {manifest.get(k)!r}" for k in differing
            )
            raise ValueError(
                f"`store` {self.directory} holds a different computation ({details}). "
                "Use a new directory, or delete this one to start over."
            )

    def _read_ledger(self) -> dict[tuple[int, int], dict]:
        path = self.directory / _LEDGER
        ledger: dict[tuple[int, int], dict] = {}
        if not path.exists():
            return ledger
        lines = path.read_bytes().split(b"\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                key = (int(entry["key"][0]), int(entry["key"][1]))
                if not isinstance(entry["sha256"], str):
                    raise TypeError("sha256 is not a string")
            except (ValueError, KeyError, TypeError, IndexError) as err:
                if number < len(lines):  # a torn last line (no newline yet) is expected
                    warnings.warn(
                        f"`store` {self.directory}: line {number} of {_LEDGER} is not a block "
                        f"record ({type(err).__name__}); its block is computed again",
                        StoreWarning,
                        stacklevel=4,
                    )
                continue
            ledger[key] = entry
        return ledger

    def _path(self, key: tuple[int, int]) -> Path:
        return self.directory / f"chunk_{key[0]:05d}_{key[1]:05d}.npy"

    def finished(self) -> set[tuple[int, int]]:
        """Keys of the blocks recorded in the ledger (not yet verified: see `load`)."""
        return set(self._ledger)

    def load(self, key: tuple[int, int], shape: tuple[int, int]) -> np.ndarray | None:
        """The verified block ``key`` of the expected ``shape``, or ``None`` (with a
        `StoreWarning` naming the file and the reason) when it must be computed again."""
        path, entry = self._path(key), self._ledger.get(key)
        problem = None
        try:
            data = path.read_bytes()
        except OSError as err:
            data, problem = None, f"cannot be read ({type(err).__name__}: {err})"
        if data is not None:
            problem = self._problem(data, entry, shape)
        if problem is None:
            return np.load(io.BytesIO(data), allow_pickle=False)
        warnings.warn(
            f"`store` {self.directory}: block {path.name} {problem}; it is computed again",
            StoreWarning,
            stacklevel=3,
        )
        return None

    @staticmethod
    def _problem(data: bytes, entry: dict | None, shape: tuple[int, int]) -> str | None:
        """Why ``data`` is not a usable block, or ``None``."""
        if entry is None:
            return "has no ledger record"
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            return "does not match its recorded SHA-256 (altered or truncated)"
        try:
            block = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError) as err:  # pickles are refused with ValueError
            return f"is not a plain .npy array ({type(err).__name__}: {err})"
        if block.shape != tuple(shape) or block.dtype != np.float64:
            expected = f"{tuple(shape)} float64"
            return f"has shape {block.shape} and dtype {block.dtype}, expected {expected}"
        if not (np.isfinite(block).all() and (block >= 0).all()):
            return "holds non-finite or negative distances"
        return None

    def save(self, key: tuple[int, int], block: np.ndarray) -> None:
        """Write ``block``, then record it in the ledger: finished only once both are on disk."""
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(block, dtype=np.float64), allow_pickle=False)
        data = buffer.getvalue()
        _atomic_write(self._path(key), data)
        entry = {
            "key": list(key),
            "shape": list(block.shape),
            "dtype": "float64",
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        with open(self.directory / _LEDGER, "ab") as handle:
            handle.write(json.dumps(entry).encode() + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        self._ledger[key] = entry
