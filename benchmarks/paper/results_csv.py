"""The per-trial CSV: one row per (model, inference, size, draw), appended under a file lock by
any worker, read back with duplicates dropped."""

from __future__ import annotations

import csv
import fcntl
import os
from pathlib import Path

__all__ = ["FIELDS", "append_row", "read_rows", "row_key"]

FIELDS = [
    "experiment", "model", "inference", "size", "draw", "seed", "status", "rmse", "crps", "picp",
    "nlpd", "seconds", "min_eigenvalue", "nonpositive_variances", "rhat_max", "ess_bulk_min",
    "divergences", "params",
]  # fmt: skip


def append_row(path: Path, row: dict) -> None:
    with open(path, "a", newline="") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            new = handle.tell() == 0
            writer = csv.DictWriter(handle, fieldnames=FIELDS, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow(row)
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_rows(path: Path) -> list[dict]:
    """The CSV's rows, one per (model, inference, size, draw): the first wins. A worker of an
    interrupted run can finish its trial after the parent is gone, so a rerun may append a
    second row for the same fit (with the same seed, the same numbers)."""
    if not path.exists():
        return []
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    unique = {}
    for row in rows:
        unique.setdefault(row_key(row), row)
    return list(unique.values())


def row_key(row) -> tuple:
    return (row["model"], row["inference"], int(row["size"]), int(row["draw"]))
