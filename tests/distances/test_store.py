"""The resumable distance store verifies what it reads: altered, truncated, stale or foreign
blocks are computed again or refused, never used; worker processes end with their parent."""

import contextlib
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from pymc_sle.distances import StoreWarning, edit_distance, pairwise

WORDS = ["kitten", "sitting", "mitten", "fitting", "bitten", "written", "sit", "kit", "", "mittens"]
EXPECTED = np.array([[edit_distance(a, b) for b in WORDS] for a in WORDS], dtype=float)


def build(store, metric=edit_distance, **kwargs):
    kwargs = {"n_jobs": 1, "chunk_size": 3, "progress": False, **kwargs}
    return pairwise(WORDS, metric, store=store, **kwargs)


def blocks(store: Path) -> list[Path]:
    return sorted(store.glob("chunk_*.npy"))


@contextlib.contextmanager
def warnings_as_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        yield


def npy_bytes(array, allow_pickle=False) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def forge_ledger(store: Path, block: Path, array: np.ndarray) -> None:
    """Write ``array`` into ``block`` with a matching ledger record: only the content checks can
    catch it."""
    data = npy_bytes(array, allow_pickle=array.dtype == object)
    block.write_bytes(data)
    _, row, col = block.stem.split("_")
    entry = {"key": [int(row), int(col)], "shape": [3, 3], "dtype": "float64"}
    entry["sha256"] = hashlib.sha256(data).hexdigest()
    with open(store / "blocks.jsonl", "a") as handle:
        handle.write(json.dumps(entry) + "\n")


ALTERATIONS = {
    "a 1x1 array": lambda store, path: path.write_bytes(npy_bytes(np.zeros((1, 1)))),
    "other values": lambda store, path: path.write_bytes(npy_bytes(np.full((3, 3), 7.0))),
    "truncated": lambda store, path: path.write_bytes(path.read_bytes()[:100]),
    "empty": lambda store, path: path.write_bytes(b""),
    "deleted": lambda store, path: path.unlink(),
    "NaN, recorded": lambda store, path: forge_ledger(store, path, np.full((3, 3), np.nan)),
    "negative, recorded": lambda store, path: forge_ledger(store, path, -np.ones((3, 3))),
    "int, recorded": lambda store, path: forge_ledger(store, path, np.ones((3, 3), int)),
    "pickled, recorded": lambda store, path: forge_ledger(
        store, path, np.array([[{"a": 1}] * 3] * 3, dtype=object)
    ),
}


@pytest.mark.parametrize("alteration", list(ALTERATIONS))
def test_an_altered_block_is_computed_again_never_used(tmp_path, alteration):
    build(tmp_path)
    target = blocks(tmp_path)[1]  # block (0, 1): off the diagonal
    ALTERATIONS[alteration](tmp_path, target)
    with pytest.warns(StoreWarning, match=rf"{tmp_path}.*{target.name}"):
        D = build(tmp_path)
    np.testing.assert_array_equal(D.values, EXPECTED)
    with warnings_as_errors():  # repaired: the next run reuses every block silently
        np.testing.assert_array_equal(build(tmp_path).values, EXPECTED)


def test_without_a_manifest_blocks_are_not_reused(tmp_path):
    build(tmp_path)
    (tmp_path / "manifest.json").unlink()
    with pytest.raises(ValueError, match=rf"`store` {tmp_path} holds blocks .* but no manifest"):
        build(tmp_path)


@pytest.mark.parametrize(
    ("text", "match"),
    [("{not json", "is not a readable manifest"), ("[1, 2]", "must hold a JSON object")],
)
def test_an_unreadable_manifest_is_refused_naming_the_file(tmp_path, text, match):
    build(tmp_path)
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(ValueError, match=rf"{tmp_path}: manifest.json {match}"):
        build(tmp_path)


def scaled(scale):
    def metric(a, b):
        return scale * edit_distance(a, b)

    return metric


def test_a_closure_with_other_captured_values_does_not_resume(tmp_path):
    build(tmp_path, scaled(1.0))
    np.testing.assert_array_equal(build(tmp_path, scaled(1.0)).values, EXPECTED)
    with pytest.raises(ValueError, match=r"holds a different computation .*metric"):
        build(tmp_path, scaled(2.0))


def test_edited_metric_code_under_the_same_name_does_not_resume(tmp_path):
    namespace_a, namespace_b = {}, {}
    exec("def metric(a, b):\n    return float(len(a) + len(b))", namespace_a)
    exec("def metric(a, b):\n    return float(abs(len(a) - len(b)))", namespace_b)
    store = tmp_path / "store"
    pairwise(WORDS, namespace_a["metric"], n_jobs=1, store=store, progress=False)
    with pytest.raises(ValueError, match="holds a different computation"):
        pairwise(WORDS, namespace_b["metric"], n_jobs=1, store=store, progress=False)


def test_a_module_level_value_the_metric_uses_is_part_of_its_identity(tmp_path):
    namespace = {"SCALE": 1.0}
    exec("def metric(a, b):\n    return SCALE * abs(len(a) - len(b))", namespace)
    store = tmp_path / "store"
    pairwise(WORDS, namespace["metric"], n_jobs=1, store=store, progress=False)
    namespace["SCALE"] = 3.0
    with pytest.raises(ValueError, match="holds a different computation"):
        pairwise(WORDS, namespace["metric"], n_jobs=1, store=store, progress=False)


def test_an_unhashable_metric_needs_a_metric_id(tmp_path):
    lock = threading.Lock()

    def locked(a, b):
        with lock:
            return edit_distance(a, b)

    with pytest.raises(TypeError, match="pass `metric_id`"):
        build(tmp_path, locked)
    np.testing.assert_array_equal(build(tmp_path, locked, metric_id="locked-v1").values, EXPECTED)


def test_a_torn_last_ledger_line_costs_one_block_without_warning(tmp_path):
    build(tmp_path)
    ledger = tmp_path / "blocks.jsonl"
    lines = ledger.read_text().splitlines()
    ledger.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])  # killed mid-append
    with warnings_as_errors():
        np.testing.assert_array_equal(build(tmp_path).values, EXPECTED)


def test_a_corrupt_ledger_line_is_reported(tmp_path):
    build(tmp_path)
    ledger = tmp_path / "blocks.jsonl"
    lines = ledger.read_text().splitlines()
    ledger.write_text("\n".join(["garbage", *lines[1:]]) + "\n")
    with pytest.warns(StoreWarning, match="line 1 of blocks.jsonl is not a block record"):
        np.testing.assert_array_equal(build(tmp_path).values, EXPECTED)


def test_a_file_where_the_store_should_be_is_refused(tmp_path):
    path = tmp_path / "store"
    path.write_text("")
    with pytest.raises(ValueError, match="`store` must be a directory"):
        build(path)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_end_with_a_killed_parent(tmp_path):
    store = tmp_path / "store"
    script = tmp_path / "run.py"
    script.write_text(
        "from slow_metric import slow_absolute_difference\n"
        "from pymc_sle.distances import pairwise\n"
        f"pairwise([float(v) for v in range(80)], slow_absolute_difference, n_jobs=2,\n"
        f"         chunk_size=4, store={str(store)!r}, progress=False)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    process = subprocess.Popen([sys.executable, str(script)], env=env)
    try:
        deadline = time.monotonic() + 240
        ledger = store / "blocks.jsonl"
        while not ledger.exists() or ledger.read_text().count("\n") < 2:  # workers are computing
            assert process.poll() is None, "the run finished before it could be killed"
            assert time.monotonic() < deadline, "no block written in time"
            time.sleep(0.05)
        workers = _children(process.pid)
        assert workers, "no worker processes found"
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if _running(pid)]
