"""A directory of finished distance blocks that survives Ctrl-C and SIGKILL.

Layout::

    store/
      manifest.json          what is being computed (metric, hashes of items/rows/cols, shape, ...)
      chunk_00003_00007.npy  one finished block each, written to a temporary file and renamed

A block file either exists whole or not at all (``os.replace`` is atomic on POSIX and Windows),
so an interrupted run leaves only finished blocks and perhaps a stray temporary file, which is
ignored and overwritten. A second run with the same manifest computes only the missing blocks;
a run with a different manifest is refused.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import numpy as np

__all__ = ["ChunkStore"]


def _atomic_write(path: Path, write) -> None:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "wb") as handle:
            write(handle)
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
        If ``directory`` already holds a different computation.
    """

    def __init__(self, directory: str | os.PathLike, manifest: dict):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        manifest_path = self.directory / "manifest.json"
        if manifest_path.exists():
            stored = json.loads(manifest_path.read_text())
            differing = sorted(
                k for k in set(stored) | set(manifest) if stored.get(k) != manifest.get(k)
            )
            if differing:
                details = "; ".join(
                    f"{k}: stored {stored.get(k)!r}, requested {manifest.get(k)!r}"
                    for k in differing
                )
                raise ValueError(
                    f"`store` {self.directory} holds a different computation ({details}). "
                    "Use a new directory, or delete this one to start over."
                )
        else:
            text = json.dumps(manifest, indent=2, sort_keys=True).encode()
            _atomic_write(manifest_path, lambda handle: handle.write(text))

    def _path(self, key: tuple[int, int]) -> Path:
        return self.directory / f"chunk_{key[0]:05d}_{key[1]:05d}.npy"

    def finished(self) -> set[tuple[int, int]]:
        """Keys of the blocks already on disk."""
        keys = set()
        for path in self.directory.glob("chunk_*_*.npy"):
            _, row, col = path.stem.split("_")
            keys.add((int(row), int(col)))
        return keys

    def load(self, key: tuple[int, int]) -> np.ndarray:
        return np.load(self._path(key), allow_pickle=False)

    def save(self, key: tuple[int, int], block: np.ndarray) -> None:
        _atomic_write(self._path(key), lambda handle: np.save(handle, block, allow_pickle=False))
