"""The engine behind every distance builder: any metric, only the pairs you need, in parallel."""

from __future__ import annotations

import inspect
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import joblib
import numpy as np

from pymc_sle._validation import indices_or_all, thread_count
from pymc_sle.distances._cutoff import resolve_cutoff
from pymc_sle.distances._identity import metric_identity, metric_name
from pymc_sle.distances._matrix import DistanceMatrix
from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix
from pymc_sle.distances._store import ChunkStore

__all__ = ["MetricError", "pairwise"]

_MANIFEST_FORMAT = 2  # 2: metric identity covers code and captured values; block ledger


class MetricError(RuntimeError):
    """A metric failed or returned an invalid value for a named pair of items."""


@dataclass(frozen=True)
class _Chunk:
    """One block of the output: row positions ``rows``, column positions ``cols``."""

    key: tuple[int, int]
    rows: np.ndarray
    cols: np.ndarray
    triangular: bool  # a diagonal block of a symmetric computation: upper triangle only

    @property
    def n_pairs(self) -> int:
        n = self.rows.size
        return n * (n - 1) // 2 if self.triangular else n * self.cols.size


def _takes_cutoff(function) -> bool:
    try:
        return "cutoff" in inspect.signature(function).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False


def _compute_chunk(
    metric, row_items, col_items, row_ids, col_ids, triangular, cutoff=None
) -> np.ndarray:
    """Evaluate ``metric`` on a block; runs in a worker process. With a ``cutoff``, pairs whose
    ``metric.lower_bound`` reaches it are not evaluated (they get ``cutoff``: not stored)."""
    skip = None
    if cutoff is not None and callable(getattr(metric, "lower_bound", None)):
        skip = np.asarray(metric.lower_bound(row_items, col_items), dtype=float) >= cutoff
        if skip.all():
            return np.full((len(row_items), len(col_items)), float(cutoff))
    if callable(getattr(metric, "block", None)):
        extra = {"cutoff": cutoff} if cutoff is not None and _takes_cutoff(metric.block) else {}
        block = np.array(metric.block(row_items, col_items, **extra), dtype=float)
        if block.shape != (len(row_items), len(col_items)):
            raise MetricError(
                f"`metric.block` must return shape {(len(row_items), len(col_items))}, but "
                f"returned {block.shape}"
            )
        if triangular:
            np.fill_diagonal(block, 0.0)
        return block
    block = np.zeros((len(row_items), len(col_items)))
    for i, a in enumerate(row_items):
        for j in range(i + 1 if triangular else 0, len(col_items)):
            if skip is not None and skip[i, j]:
                block[i, j] = cutoff
                continue
            try:
                block[i, j] = metric(a, col_items[j])
            except Exception as err:
                raise MetricError(
                    f"metric failed on items ({row_ids[i]}, {col_ids[j]}): "
                    f"{type(err).__name__}: {err}"
                ) from err
    if triangular:
        block += block.T
    return block


def _plan(n_rows: int, n_cols: int, symmetric: bool, chunk_size: int) -> list[_Chunk]:
    row_blocks = [np.arange(s, min(s + chunk_size, n_rows)) for s in range(0, n_rows, chunk_size)]
    col_blocks = [np.arange(s, min(s + chunk_size, n_cols)) for s in range(0, n_cols, chunk_size)]
    return [
        _Chunk((bi, bj), rows, cols, triangular=symmetric and bi == bj)
        for bi, rows in enumerate(row_blocks)
        for bj, cols in enumerate(col_blocks)
        if not symmetric or bi <= bj
    ]


def _tasks(chunks, items, row_ids, col_ids, metric, cutoff):
    for chunk in chunks:
        rid, cid = row_ids[chunk.rows], col_ids[chunk.cols]
        row_items, col_items = [items[i] for i in rid], [items[j] for j in cid]
        yield chunk, (metric, row_items, col_items, rid, cid, chunk.triangular, cutoff)


def _chunk_and_block(chunk: _Chunk, args) -> tuple[_Chunk, np.ndarray]:
    return chunk, _compute_chunk(*args)


def _exit_with_parent(parent_pid: int) -> None:
    """Worker initializer: end this worker when its parent does. A parent killed by SIGKILL
    cannot shut its workers down, and loky's would compute on for minutes; a daemon thread
    notices the re-parenting within a fraction of a second (POSIX; a no-op elsewhere)."""
    if os.name != "posix":
        return

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="pymc-sle-parent-watch", daemon=True).start()


#: Starting worker processes costs about this many seconds (interpreter, imports, pickling the
#: items); a computation expected to finish sooner in this process stays in it.
WORKER_START_SECONDS = 1.0


def _run_joblib(tasks, n_jobs: int) -> Iterator[tuple[_Chunk, np.ndarray]]:
    """Blocks in worker processes -- unless the job is small: the first block is computed here,
    and if all of them would take less than ``WORKER_START_SECONDS`` at that pace, the rest
    follow it here too, so a small job never pays for starting workers."""
    tasks = list(tasks)
    if not tasks:
        return
    if n_jobs != 1:
        started = time.perf_counter()
        yield _chunk_and_block(*tasks[0])
        elapsed = time.perf_counter() - started
        tasks = tasks[1:]
        if elapsed * len(tasks) >= WORKER_START_SECONDS:
            parallel = joblib.Parallel(
                n_jobs=n_jobs,
                return_as="generator_unordered",
                initializer=_exit_with_parent,
                initargs=(os.getpid(),),
            )
            yield from parallel(joblib.delayed(_chunk_and_block)(c, args) for c, args in tasks)
            return
    for task in tasks:
        yield _chunk_and_block(*task)


def _check_client(client) -> None:
    """Reject a wrong ``client`` before anything is computed or written."""
    if isinstance(client, str):
        return
    try:
        from distributed import Client
    except ImportError as err:
        raise ImportError("`client` needs dask.distributed: pip install 'pymc-sle[dask]'") from err
    if not isinstance(client, Client):
        raise TypeError(
            "`client` must be a dask.distributed.Client or a scheduler address, but got "
            f"{type(client).__name__}"
        )


def _run_dask(tasks, client) -> Iterator[tuple[_Chunk, np.ndarray]]:
    from distributed import Client, as_completed

    own_client = isinstance(client, str)
    if own_client:
        client = Client(client)
    try:
        futures = {client.submit(_compute_chunk, *args, pure=False): chunk for chunk, args in tasks}
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        if own_client:
            client.close()


def _check_block(block: np.ndarray, chunk: _Chunk, row_ids, col_ids) -> None:
    bad = ~np.isfinite(block) | (block < 0)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise MetricError(
            "metric must return finite, non-negative distances, but returned "
            f"{block[i, j].item()!r} for items ({row_ids[chunk.rows[i]]}, {col_ids[chunk.cols[j]]})"
        )


def joined(items, rows, to, cols) -> tuple[list, np.ndarray, np.ndarray]:
    """``items`` followed by ``to`` as one list, with ``rows`` (indices into ``items``, default
    all) and ``cols`` (into ``to``, default all) as indices into it."""
    if len(to) == 0:
        raise ValueError("`to` must not be empty, but has length 0")
    row_ids = indices_or_all("rows", rows, len(items), axis_name="items")
    col_ids = indices_or_all("cols", cols, len(to), axis_name="items of `to`")
    return [*items, *to], row_ids, len(items) + col_ids


def pairwise(
    items: Sequence,
    metric: Callable[[object, object], float],
    rows=None,
    cols=None,
    *,
    to: Sequence | None = None,
    symmetric: bool | None = None,
    n_jobs: int = -1,
    chunk_size: int | None = None,
    store: str | os.PathLike | None = None,
    client=None,
    progress: bool = True,
    metric_id: str | None = None,
    cutoff: float | str | None = None,
    per_bump: int = 32,
) -> DistanceMatrix | SparseDistanceMatrix:
    r"""Distances :math:`D_{ij} = d(\text{items}[\text{rows}_i], \text{items}[\text{cols}_j])`.

    Only the requested ``rows x cols`` block is computed -- for an SLE model, every evaluated
    point against the landmarks, not all pairs. Blocks of pairs run in parallel processes
    (joblib) or on a Dask cluster, and can be written to a resumable on-disk ``store``.

    Parameters
    ----------
    items : sequence
        Anything indexable with ``len``: strings, arrays, graphs, ...
    metric : callable
        ``metric(a, b) -> float``, finite and non-negative. Must be picklable for ``n_jobs != 1``
        (module-level functions and class instances are; joblib also handles lambdas). A metric
        with a ``block(row_items, col_items) -> ndarray`` attribute (as
        :func:`~pymc_sle.distances.edit_distance` has) is called once per block instead of once
        per pair: vectorised metrics skip Python's per-pair overhead.
    rows, cols : array_like of int, optional
        Indices into ``items`` (``cols``: into ``to`` when given); ``None`` means all.
    to : sequence, optional
        Other items for the columns: ``D[i, j] = d(items[rows[i]], to[cols[j]])``. For points
        that arrive after a fit, ``pairwise(new_items, metric, to=landmark_items)`` computes
        exactly the block the model needs, without the training block.
    symmetric : bool, optional
        Compute each unordered pair once and set ``D[i, i] = 0``; requires ``rows == cols``.
        Default: True when ``rows`` and ``cols`` are identical, which assumes a symmetric metric
        with ``d(x, x) = 0``; pass ``False`` for anything else.
    n_jobs : int, default -1
        Worker processes (-1: all cores; 1: run in this process). A job whose first block
        suggests it will finish within about a second stays in this process whatever ``n_jobs``
        says: starting workers would cost more than it saves.
    chunk_size : int, optional
        Rows and columns per block (default: ~8 blocks along the longer side, at most 256).
    store : path, optional
        Directory for finished blocks. A rerun with the same items, metric, rows and cols
        resumes, computing only missing blocks; a different computation is refused. Every block
        read back is verified against the SHA-256 recorded when it was written; one that fails
        is computed again (with a `StoreWarning`), never used.
    client : dask.distributed.Client or str, optional
        Run blocks on this Dask cluster (or the scheduler at this address) instead of joblib.
    progress : bool, default True
        Show a tqdm progress bar of pairs.
    metric_id : str, optional
        Identity of the metric recorded in the store's manifest. Default: its qualified name and
        a hash of its code, captured values, module-level values it uses and pickled state (a
        metric edited between runs does not resume from the old blocks). Required with ``store``
        when that state cannot be hashed.
    cutoff : float, optional
        Keep only the distances below ``cutoff`` and return a
        :class:`~pymc_sle.SparseDistanceMatrix` (for large training sets: memory follows the
        pairs kept). A metric may make this cheaper: a ``block`` that takes a ``cutoff`` keyword
        gets it (``edit_distance`` stops counting edits there, with rapidfuzz's
        ``score_cutoff``), and a ``lower_bound(row_items, col_items) -> ndarray`` attribute,
        which must never exceed the metric, skips the pairs and blocks it puts at or above the
        cutoff. ``"auto"``: the cutoff at which a typical row reaches ``per_bump`` columns (the
        median ``per_bump``-th nearest column of up to 256 rows evaluated against every column
        first; see ``pymc_sle.distances._cutoff``).
    per_bump : int, default 32
        With ``cutoff="auto"``: the number of columns (landmarks) a row's bump should reach.

    Returns
    -------
    DistanceMatrix of shape (len(rows), len(cols)), or SparseDistanceMatrix with ``cutoff``

    Raises
    ------
    MetricError
        Naming the pair of items for which ``metric`` raised or returned a non-finite or negative
        value.

    Examples
    --------
    >>> from pymc_sle.distances import edit_distance, pairwise
    >>> words = ["kitten", "sitting", "mitten", "fitting"]
    >>> pairwise(words, edit_distance, cols=[0, 1], n_jobs=1, progress=False).values
    array([[0., 3.],
           [3., 0.],
           [1., 3.],
           [3., 1.]])
    """
    n_items = len(items)
    if n_items == 0:
        raise ValueError("`items` must not be empty, but has length 0")
    if to is None:
        row_ids = indices_or_all("rows", rows, n_items, axis_name="items")
        col_ids = indices_or_all("cols", cols, n_items, axis_name="items")
    else:
        items, row_ids, col_ids = joined(items, rows, to, cols)
    same = row_ids.shape == col_ids.shape and np.array_equal(row_ids, col_ids)
    if symmetric is None:
        symmetric = same
    elif symmetric and not same:
        raise ValueError("`symmetric=True` requires `rows` and `cols` to be the same indices")
    if chunk_size is None:
        chunk_size = int(np.clip(math.ceil(max(row_ids.size, col_ids.size) / 8), 1, 256))
    elif not isinstance(chunk_size, int | np.integer) or chunk_size < 1:
        raise ValueError(f"`chunk_size` must be a positive integer, but got {chunk_size!r}")
    thread_count(n_jobs)
    if client is not None:
        _check_client(client)
    automatic = isinstance(cutoff, str) and cutoff == "auto"
    cutoff = resolve_cutoff(
        cutoff, per_bump, row_ids.size, col_ids.size,
        lambda positions: pairwise(
            items, metric, row_ids[positions], col_ids, symmetric=False, n_jobs=n_jobs,
            client=client, progress=False, metric_id=metric_id,
        ).values,
    )  # fmt: skip

    chunks = _plan(row_ids.size, col_ids.size, symmetric, chunk_size)
    values = np.zeros((row_ids.size, col_ids.size)) if cutoff is None else None
    kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def place(chunk: _Chunk, block: np.ndarray) -> None:
        if cutoff is not None:
            i, j = np.nonzero(block < cutoff)
            kept.append((chunk.rows[i], chunk.cols[j], block[i, j]))
            if symmetric and not chunk.triangular:
                kept.append((chunk.cols[j], chunk.rows[i], block[i, j]))
            return
        values[np.ix_(chunk.rows, chunk.cols)] = block
        if symmetric and not chunk.triangular:
            values[np.ix_(chunk.cols, chunk.rows)] = block.T

    chunk_store = None
    if store is not None:
        chunk_store = ChunkStore(
            store,
            {
                "format": _MANIFEST_FORMAT,
                "metric": metric_id if metric_id is not None else metric_identity(metric),
                "items": joblib.hash(list(items) if not isinstance(items, np.ndarray) else items),
                "rows": joblib.hash(row_ids),
                "cols": joblib.hash(col_ids),
                "shape": [int(row_ids.size), int(col_ids.size)],
                "symmetric": bool(symmetric),
                "chunk_size": int(chunk_size),
            },
        )
        finished = chunk_store.finished()
        missing = []
        for chunk in chunks:
            block = None
            if chunk.key in finished:
                block = chunk_store.load(chunk.key, (chunk.rows.size, chunk.cols.size))
            if block is None:
                missing.append(chunk)
            else:
                place(chunk, block)
        chunks = missing

    from tqdm.auto import tqdm

    tasks = _tasks(chunks, items, row_ids, col_ids, metric, cutoff)
    results = _run_dask(tasks, client) if client is not None else _run_joblib(tasks, n_jobs)
    with tqdm(total=sum(c.n_pairs for c in chunks), unit="pair", disable=not progress) as bar:
        for chunk, block in results:
            _check_block(block, chunk, row_ids, col_ids)
            if chunk_store is not None:
                chunk_store.save(chunk.key, block)
            place(chunk, block)
            bar.update(chunk.n_pairs)
    metadata = {
        "metric": metric_id if metric_id is not None else metric_name(metric),
        "rows": row_ids.tolist() if rows is not None else None,
        "cols": (col_ids - (n_items if to is not None else 0)).tolist()
        if cols is not None
        else None,
        **({"to": len(to)} if to is not None else {}),
        **({"per_bump": per_bump} if automatic else {}),
    }
    if cutoff is None:
        return DistanceMatrix(values, metadata=metadata)
    row, col, value = (np.concatenate(part) for part in zip(*kept, strict=True))
    return SparseDistanceMatrix.from_triplets(
        row, col, value, shape=(row_ids.size, col_ids.size), cutoff=cutoff, metadata=metadata
    )
