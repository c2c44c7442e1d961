"""Where batches run: in this process, in a pool of processes, or on a Dask cluster.

Every executor maps a function over batch descriptions and yields the results *in
order*, so reducers (sums of counts, concatenated estimates) see the same sequence
whatever ran them: a run's result is identical for one seed under every executor and
every batch split (batches are whole seeding blocks, see :mod:`privsim.parties.rng`).

Tasks travel as cloudpickle blobs, so protocols defined in a script or a test (and
closures such as audit scores) run in worker processes too. A task that raises, or a
worker that dies, is retried (Dask: ``retries``; processes: the pool is rebuilt once);
if it still fails, the whole run fails with :class:`~privsim.errors.ExecutorError` naming
the batch — no partial result is ever presented as complete.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import cloudpickle

from privsim.errors import ExecutorError, ParameterError, PrivsimError

__all__ = ["EXECUTORS", "DaskExecutor", "Executor", "LocalExecutor", "ProcessExecutor", "get_executor"]

#: The executor names accepted by ``--executor`` and ``executor=``.
EXECUTORS = ("local", "processes", "dask")


def _run_blob(blob: bytes) -> bytes:
    # Runs in the worker. Errors come back as plain data: a privsim error keeps its class
    # and message (and a party failure its party and round); tracebacks stay in the worker.
    fn, item = cloudpickle.loads(blob)
    try:
        return cloudpickle.dumps(("ok", fn(item)))
    except PrivsimError as exc:
        return cloudpickle.dumps(("privsim", type(exc).__name__, str(exc), getattr(exc, "party", None),
                                  getattr(exc, "round", None)))
    except Exception as exc:
        return cloudpickle.dumps(("error", f"{type(exc).__name__}: {exc}"))


def _unpack(blob: bytes, index: int, where: str) -> Any:
    from privsim import errors

    kind, *rest = cloudpickle.loads(blob)
    if kind == "ok":
        return rest[0]
    if kind == "privsim":
        name, message, party, round_ = rest
        cls = getattr(errors, name, PrivsimError)
        raise cls(message, party, round_) if cls is errors.PartyFailure else cls(message)
    raise ExecutorError(f"batch {index} failed {where}: {rest[0]}; the run is incomplete and no result is reported")


class Executor:
    """Maps a function over items, yielding results in order. Use as a context manager.

    >>> with LocalExecutor() as ex:
    ...     list(ex.map(lambda v: v * v, [1, 2, 3]))
    [1, 4, 9]
    """

    name = "base"
    workers = 1

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """Apply ``fn`` to every item; results come back in the items' order."""
        raise NotImplementedError

    def close(self) -> None:
        """Release workers (a no-op for the local executor)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class LocalExecutor(Executor):
    """Runs every batch in this process, one after the other.

    >>> list(LocalExecutor().map(str, [1, 2]))
    ['1', '2']
    """

    name = "local"

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        for item in items:
            yield fn(item)


class ProcessExecutor(Executor):
    """A pool of worker processes on this machine (default: one per core).

    Workers are spawned (fresh interpreters), so a script that uses this executor must
    keep its top-level work under ``if __name__ == "__main__":``, as with
    :mod:`multiprocessing`; the ``privsim`` command and ``python -m privsim`` do.

    >>> with ProcessExecutor(workers=2) as ex:
    ...     list(ex.map(abs, [-1, -2]))
    [1, 2]
    """

    name = "processes"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = int(workers or os.cpu_count() or 1)
        if self.workers < 1:
            raise ParameterError(f"workers must be >= 1 (got {self.workers})")
        self._pool: ProcessPoolExecutor | None = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # Fresh interpreters (not forks of a parent that may hold threads and a large heap).
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"))
        return self._pool

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        blobs = [cloudpickle.dumps((fn, item)) for item in items]
        futures = [self._get_pool().submit(_run_blob, b) for b in blobs]
        for index, fut in enumerate(futures):
            try:
                blob = fut.result()
            except BrokenProcessPool:
                # A worker died (killed, out of memory): rebuild the pool and retry this
                # batch once, here, before giving up on the run.
                self.close()
                try:
                    blob = self._get_pool().submit(_run_blob, blobs[index]).result()
                except BrokenProcessPool as exc:
                    raise ExecutorError(f"batch {index}: a worker process died twice; the run is incomplete "
                                        "and no result is reported") from exc
                futures[index + 1:] = [self._get_pool().submit(_run_blob, b) for b in blobs[index + 1:]]
            yield _unpack(blob, index, "in a worker process")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class DaskExecutor(Executor):
    """Batches on a dask.distributed cluster: an existing one (``scheduler="tcp://HOST:PORT"``)
    or, by default, a LocalCluster on this machine (loopback only, one single-threaded
    worker process per core). Each batch is retried ``retries`` times if its worker dies.

    Example: ``run_trials(protocol, x, trials=10**6, executor=DaskExecutor("tcp://10.0.0.5:8786"))``,
    or ``privsim run ... --executor dask --scheduler tcp://10.0.0.5:8786`` on the command line.
    """

    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int | None = None, retries: int = 2) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - dask is a dependency
            raise ParameterError("executor dask needs dask.distributed (pip install 'dask[distributed]')") from None
        self.retries = retries
        self._cluster = None
        import dask

        # Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_ set, which turns off
        # glibc's adaptive mmap threshold: every array over 128 KiB is then a fresh mmap,
        # and the page faults made numpy about 45% slower in our workers. Unset it for the
        # clusters we start (an existing cluster keeps its own settings).
        environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
        environ.pop("MALLOC_TRIM_THRESHOLD_", None)
        try:
            if scheduler:
                self._client = Client(scheduler, timeout="20s")
            else:
                with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
                    self._cluster = LocalCluster(n_workers=int(workers or os.cpu_count() or 1),
                                                 threads_per_worker=1, processes=True, host="127.0.0.1",
                                                 dashboard_address=None)
                self._client = Client(self._cluster)
        except OSError as exc:
            raise ExecutorError(f"dask: cannot reach the scheduler {scheduler!r}: {exc}") from None
        self.workers = len(self._client.scheduler_info().get("workers", {})) or 1

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        blobs = [cloudpickle.dumps((fn, item)) for item in items]
        futures = [self._client.submit(_run_blob, b, retries=self.retries, pure=False) for b in blobs]
        for index, fut in enumerate(futures):
            try:
                blob = fut.result()
            except Exception as exc:  # the worker died `retries + 1` times (KilledWorker) or was lost
                self._cancel(futures)
                raise ExecutorError(f"batch {index} failed on the dask cluster: {type(exc).__name__}: {exc}; "
                                    "the run is incomplete and no result is reported") from None
            try:
                yield _unpack(blob, index, "on the dask cluster")
            except PrivsimError:
                self._cancel(futures)
                raise

    def _cancel(self, futures: list[Any]) -> None:
        try:
            self._client.cancel(futures)
        except Exception:  # pragma: no cover - best effort
            pass

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def get_executor(kind: str | Executor | None = "local", *, scheduler: str | None = None,
                 workers: int | None = None) -> Executor:
    """An executor by name: ``local``, ``processes`` or ``dask`` (an :class:`Executor` passes through).

    >>> get_executor("local").name
    'local'
    """
    if isinstance(kind, Executor):
        return kind
    kind = kind or "local"
    if kind == "local":
        if scheduler:
            raise ParameterError("--scheduler is only for --executor dask")
        return LocalExecutor()
    if kind == "processes":
        if scheduler:
            raise ParameterError("--scheduler is only for --executor dask")
        return ProcessExecutor(workers)
    if kind == "dask":
        return DaskExecutor(scheduler, workers)
    raise ParameterError(f"executor must be one of {', '.join(EXECUTORS)} (got {kind!r})")
