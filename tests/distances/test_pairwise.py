import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pymc_sle.distances import MetricError, edit_distance, pairwise
from tests.distances import slow_metric

WORDS = ["kitten", "sitting", "mitten", "fitting", "bitten", "written", "sit", "kit", "", "mittens"]


def _brute_force(items, metric, rows, cols):
    return np.array([[metric(items[i], items[j]) for j in cols] for i in rows])


@pytest.mark.parametrize("chunk_size", [1, 3, 4, 100])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_symmetric_all_pairs_match_brute_force(chunk_size, n_jobs):
    D = pairwise(WORDS, edit_distance, n_jobs=n_jobs, chunk_size=chunk_size, progress=False)
    expected = _brute_force(WORDS, edit_distance, range(10), range(10))
    np.testing.assert_array_equal(D.values, expected)


@pytest.mark.parametrize("chunk_size", [1, 3, 100])
def test_rows_and_cols_subset_equals_block_of_full_matrix(chunk_size):
    rows, cols = [9, 0, 4, 4, 7], [2, 8, 1]
    full = pairwise(WORDS, edit_distance, n_jobs=1, progress=False).values
    D = pairwise(WORDS, edit_distance, rows, cols, n_jobs=1, chunk_size=chunk_size, progress=False)
    np.testing.assert_array_equal(D.values, full[np.ix_(rows, cols)])
    assert D.metadata["rows"] == rows and D.metadata["cols"] == cols


def test_asymmetric_metric_with_symmetric_false():
    items = [1.0, 2.0, 5.0]
    D = pairwise(items, lambda a, b: max(a - b, 0.0), symmetric=False, n_jobs=1, progress=False)
    np.testing.assert_array_equal(D.values, [[0, 0, 0], [1, 0, 0], [4, 3, 0]])


def test_store_resumes_and_refuses_a_different_computation(tmp_path):
    first = pairwise(WORDS, edit_distance, n_jobs=1, chunk_size=3, store=tmp_path, progress=False)
    blocks = sorted(tmp_path.glob("chunk_*.npy"))
    assert len(blocks) == 10  # 4 x 4 blocks, upper triangle
    stamps = {p: p.stat().st_mtime_ns for p in blocks}
    again = pairwise(WORDS, edit_distance, n_jobs=1, chunk_size=3, store=tmp_path, progress=False)
    np.testing.assert_array_equal(first.values, again.values)
    assert {p: p.stat().st_mtime_ns for p in blocks} == stamps  # nothing recomputed
    with pytest.raises(ValueError, match=r"holds a different computation.*rows"):
        pairwise(
            WORDS,
            edit_distance,
            rows=[0, 1],
            n_jobs=1,
            chunk_size=3,
            store=tmp_path,
            progress=False,
        )


def test_store_ignores_stray_temporary_files(tmp_path):
    pairwise(WORDS[:4], edit_distance, n_jobs=1, store=tmp_path, progress=False)
    (tmp_path / ".chunk_00000_00001.npy.deadbeef.tmp").write_bytes(b"partial")
    D = pairwise(WORDS[:4], edit_distance, n_jobs=1, store=tmp_path, progress=False)
    np.testing.assert_array_equal(D.values, _brute_force(WORDS, edit_distance, range(4), range(4)))


def test_killed_run_resumes_without_recomputing_finished_chunks(tmp_path):
    items = [float(v) for v in np.random.default_rng(0).uniform(size=24)]
    store = tmp_path / "store"
    script = tmp_path / "run.py"
    script.write_text(
        "from tests.distances.slow_metric import slow_absolute_difference\n"
        "from pymc_sle.distances import pairwise\n"
        f"pairwise({items!r}, slow_absolute_difference, n_jobs=1, chunk_size=4,\n"
        f"         store={str(store)!r}, progress=False)\n"
    )
    # the child finds the tests package through PYTHONPATH, the repository's root
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    process = subprocess.Popen([sys.executable, str(script)], env=env)
    try:
        deadline = time.monotonic() + 120
        ledger = store / "blocks.jsonl"  # a block is finished once recorded there
        while not ledger.exists() or ledger.read_text().count("\n") < 3:
            assert process.poll() is None, "the run finished before it could be killed"
            assert time.monotonic() < deadline, "no chunk written in time"
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    finished = {p: p.read_bytes() for p in store.glob("chunk_*.npy")}
    manifest = json.loads((store / "manifest.json").read_text())
    assert 3 <= len(finished) < 21  # 6 x 6 blocks, 21 in the upper triangle

    slow_metric.CALLS.clear()
    resumed = pairwise(
        items,
        slow_metric.slow_absolute_difference,
        n_jobs=1,
        chunk_size=4,
        store=store,
        progress=False,
    )
    total_pairs = 24 * 23 // 2
    assert 0 < len(slow_metric.CALLS) <= total_pairs - 3 * 6  # at least 3 blocks were reused
    for path, content in finished.items():
        assert path.read_bytes() == content
    assert json.loads((store / "manifest.json").read_text()) == manifest
    x = np.array(items)
    np.testing.assert_array_equal(resumed.values, np.abs(x[:, None] - x[None, :]))


def test_dask_cluster_equals_joblib():
    distributed = pytest.importorskip("distributed")
    expected = pairwise(WORDS, edit_distance, n_jobs=1, chunk_size=3, progress=False)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster) as client:
            D = pairwise(WORDS, edit_distance, chunk_size=3, client=client, progress=False)
    np.testing.assert_array_equal(D.values, expected.values)


def test_metric_error_names_the_pair_for_invalid_values():
    def nan_from_two(a, b):
        return np.nan if a == 2.0 else abs(a - b)

    with pytest.raises(MetricError, match=r"returned nan for items \(2, 0\)"):
        pairwise([0.0, 1.0, 2.0], nan_from_two, symmetric=False, n_jobs=1, progress=False)


def test_metric_error_names_the_pair_for_exceptions():
    # Every pair with the empty word (index 8) fails; with 2 workers, whichever block fails first
    # is reported, so any of them may be named.
    with pytest.raises(MetricError, match=r"metric failed on items \(\d, 8\): ValueError: empty"):
        pairwise(WORDS, _refuse_empty, n_jobs=2, progress=False)


def _refuse_empty(a, b):
    if not b:
        raise ValueError("empty")
    return edit_distance(a, b)


def test_rejects_symmetric_with_different_rows_and_cols():
    with pytest.raises(
        ValueError, match="`symmetric=True` requires `rows` and `cols` to be the same"
    ):
        pairwise(WORDS, edit_distance, rows=[0, 1], cols=[1, 2], symmetric=True)


def test_rejects_out_of_range_rows():
    with pytest.raises(
        ValueError, match=r"`rows` must index the 10 items \(0 to 9\), but contains 10"
    ):
        pairwise(WORDS, edit_distance, rows=[10])


def test_rejects_empty_cols():
    with pytest.raises(
        ValueError, match=r"`cols` must be a non-empty 1-D array of indices, but has shape \(0,\)"
    ):
        pairwise(WORDS, edit_distance, cols=np.array([], dtype=int))


def test_rejects_zero_chunk_size():
    with pytest.raises(ValueError, match="`chunk_size` must be a positive integer, but got 0"):
        pairwise(WORDS, edit_distance, chunk_size=0)


def test_rejects_zero_jobs():
    with pytest.raises(ValueError, match="`n_jobs` must be a positive integer or -1, but got 0"):
        pairwise(WORDS, edit_distance, n_jobs=0)


def test_rejects_bad_client():
    pytest.importorskip("distributed")
    with pytest.raises(TypeError, match=r"`client` must be a dask\.distributed\.Client"):
        pairwise(WORDS, edit_distance, client=42, progress=False)


def test_empty_items_are_named():
    with pytest.raises(ValueError, match="`items` must not be empty, but has length 0"):
        pairwise([], edit_distance, progress=False)


def _random_strings(rng, n, alphabet="ACGTé字"):
    return ["".join(rng.choice(list(alphabet), rng.integers(0, 30))) for _ in range(n)]


def python_edit_distance(a: str, b: str) -> float:
    """The Wagner-Fischer dynamic programme, one row at a time: the reference implementation."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            )
        previous = current
    return float(previous[-1])


def test_edit_distance_equals_the_dynamic_programme_on_random_strings():
    rng = np.random.default_rng(0)
    strings = [*_random_strings(rng, 40), "", "kitten", "sitting"]
    for a in strings:
        for b in strings[:15]:
            assert edit_distance(a, b) == python_edit_distance(a, b), (a, b)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_block_metrics_equal_the_per_pair_metric(n_jobs):
    strings = _random_strings(np.random.default_rng(1), 23)
    blocked = pairwise(strings, edit_distance, n_jobs=n_jobs, chunk_size=5, progress=False)
    per_pair = pairwise(strings, lambda a, b: edit_distance(a, b), n_jobs=1, progress=False)
    np.testing.assert_array_equal(blocked.values, per_pair.values)
    rows, cols = [3, 0, 22], [5, 5, 1, 9]
    part = pairwise(strings, edit_distance, rows, cols, n_jobs=1, chunk_size=2, progress=False)
    np.testing.assert_array_equal(part.values, per_pair.values[np.ix_(rows, cols)])


def test_edit_distance_names_a_non_string():
    with pytest.raises(TypeError, match="compares strings, but `a, b` holds a int: 3"):
        edit_distance("abc", 3)
    with pytest.raises(TypeError, match="`items` holds a list"):
        pairwise(["a", ["b"]], edit_distance, n_jobs=1, progress=False)


def test_a_block_of_the_wrong_shape_is_a_metric_error():
    def metric(a, b):
        return 0.0

    metric.block = lambda rows, cols: np.zeros((1, 1))
    with pytest.raises(MetricError, match=r"`metric.block` must return shape \(3, 3\)"):
        pairwise(["a", "b", "c"], metric, n_jobs=1, chunk_size=3, progress=False)


def test_a_small_job_never_starts_workers():
    """Sixteen instant pairs with n_jobs=2: computed in this process, no worker start-up."""
    D = pairwise(
        [0.0] * 4 + [1.0] * 4, slow_metric.InWorker(), n_jobs=2, chunk_size=2, progress=False
    )
    assert (D.values == 0).all()


def test_a_long_job_uses_the_workers():
    """Blocks of 0.3 s pairs: the first block shows the job will outlast the workers' start-up."""
    items = [0.3] * 6
    D = pairwise(items, slow_metric.InWorker(), cols=[0], n_jobs=2, chunk_size=1, progress=False)
    assert D.values[0, 0] == 0.0  # the first block, measured in this process
    assert (D.values[1:] == 1.0).all()


def test_to_computes_the_block_against_other_items():
    words = ["kitten", "sitting", "mitten", "fitting", "bitten", "smitten"]
    D = pairwise(words[4:], edit_distance, to=words[:4], cols=[0, 3], progress=False)
    expected = pairwise(words, edit_distance, rows=[4, 5], cols=[0, 3], n_jobs=1, progress=False)
    np.testing.assert_array_equal(D.values, expected.values)
    assert D.metadata["cols"] == [0, 3] and D.metadata["to"] == 4


def test_to_validates_its_indices_and_contents():
    with pytest.raises(ValueError, match="`to` must not be empty"):
        pairwise(["a"], edit_distance, to=[], progress=False)
    with pytest.raises(ValueError, match=r"`cols`.*items of `to`"):
        pairwise(["a"], edit_distance, to=["b"], cols=[1], progress=False)
    with pytest.raises(ValueError, match="`symmetric=True`"):
        pairwise(["a"], edit_distance, to=["a"], symmetric=True, progress=False)
