"""Where batches run: in this process, in a pool of processes, or on a Dask cluster.

Every executor maps a function over batch descriptions and yields the results *in
order*, so reducers (sums of counts, concatenated estimates) see the same sequence
whatever ran them: a run's result is identical for one seed under every executor and
every batch split (batches are whole seeding blocks, see :mod:`privsim.parties.rng`).

Tasks travel as cloudpickle blobs, so protocols defined in a script or a test (and
closures such as audit scores) run in worker processes too. A map pickles its function
(which carries the plan) once, and every task carries those same bytes beside its own
item; a worker unpickles the function once per map, not once per task (as in this
process, the map's tasks on one worker then share one function object). A task that raises is
reported, with its error's class and message. A task whose worker dies is run again
(processes: once, on a rebuilt pool; Dask: on another worker, and when a result is late,
a LocalCluster's lost workers are started again and, if nothing runs, the pending tasks
are submitted again); if it still fails, the whole run fails with
:class:`~privsim.errors.ExecutorError` naming the batch — no partial result is ever
presented as complete.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import cloudpickle

from privsim import errors
from privsim.errors import ExecutorError, ParameterError, PrivsimError
from privsim.interrupts import Interrupted, check_interrupted, interrupt, interrupted

__all__ = ["EXECUTORS", "DaskExecutor", "Executor", "LocalExecutor", "ProcessExecutor", "end_workers",
           "get_executor"]

#: The executor names accepted by ``--executor`` and ``executor=``.
EXECUTORS = ("local", "processes", "dask")


#: A task: its map's token, the map's pickled function (the same bytes object in every task
#: of the map) and the task's own pickled item.
Task = tuple[bytes, bytes, bytes]


def _tasks(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Task]:
    blob, token = cloudpickle.dumps(fn), uuid.uuid4().bytes
    return [(token, blob, cloudpickle.dumps(item)) for item in items]


#: The function of the map a worker ran last, by its map's token: unpickled once per worker
#: and map (a task run again, on a rebuilt pool or another Dask worker, carries the same token).
_LOADED: dict[bytes, Any] = {}


def _run_task(task: Task) -> tuple[Any, ...]:
    # Runs in the worker. Errors come back as plain data: a privsim error keeps its class
    # and message (and a party failure its party and round); tracebacks stay in the worker.
    key, fn_blob, item_blob = task
    fn = _LOADED.get(key)
    if fn is None:
        _LOADED.clear()
        fn = _LOADED[key] = cloudpickle.loads(fn_blob)
    item = cloudpickle.loads(item_blob)
    try:
        return ("ok", fn(item))
    except PrivsimError as exc:
        return ("privsim", type(exc).__name__, str(exc), getattr(exc, "party", None), getattr(exc, "round", None))
    except Exception as exc:
        return ("error", f"{type(exc).__name__}: {exc}")


def _run_blob(task: Task) -> bytes:
    # The same, its result pickled by cloudpickle (a process pool pickles with plain pickle,
    # which refuses classes defined in a script). Dask serializes _run_task's results
    # itself: arrays go out of band, without the copies a blob costs.
    if _WORKER_STATE["stopping"]:  # ended (end_workers): a batch queued before that is not started
        raise Interrupted(signal.SIGTERM)
    _WORKER_STATE["in_task"] = True
    try:
        return cloudpickle.dumps(_run_task(task))
    finally:
        _WORKER_STATE["in_task"] = False


# A process-pool worker's state: inside a task, and whether end_workers has stopped it.
_WORKER_STATE = {"in_task": False, "stopping": False}


def _on_stop(signum: int, frame: Any) -> None:
    # SIGTERM in a process-pool worker. A worker killed while it writes a result to the
    # pool's pipe leaves the pool's reader blocked on half a message for ever (close() and
    # interpreter exit then hang), so the task is interrupted as the command is
    # (privsim.interrupts: a party loop is cancelled and unwinds, other code raises
    # Interrupted), its failure is written whole, and the pool's shutdown ends the worker.
    # Outside a task (idle, or writing a result) the signal only marks the worker as stopping.
    _WORKER_STATE["stopping"] = True
    if _WORKER_STATE["in_task"]:
        _WORKER_STATE["in_task"] = False  # once: the task's own finally blocks are not interrupted
        interrupted(clear=True)  # (a second try, from _on_unraisable, acts again)
        interrupt(signum)


def _on_unraisable(hook: Callable[[Any], None]) -> Callable[[Any], None]:
    # Interrupted raised where Python only reports it (a __del__ running when the signal came):
    # the stop is tried again 10 ms later (SIGALRM), so that the task stops at its next step.
    def report(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, Interrupted):  # (still inside the task it missed)
            _WORKER_STATE["in_task"] = True
            signal.setitimer(signal.ITIMER_REAL, 0.01)
        else:
            hook(unraisable)

    return report


#: Thread-count variables of the usual numerical libraries, set to 1 in our worker
#: processes (as Dask's nannies do): one worker per core, each single-threaded.
_ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _init_worker() -> None:
    # Ctrl-C reaches the whole process group: the parent ends its workers (end_workers), so
    # they ignore SIGINT rather than print a traceback each.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_stop)  # end_workers stops the running task (see _on_stop)
    signal.signal(signal.SIGALRM, _on_stop)  # (_on_unraisable's second try)
    sys.unraisablehook = _on_unraisable(sys.unraisablehook)
    # Runs first in every worker process. Two workers whose BLAS calls each start a
    # thread per core oversubscribe the machine (and OpenBLAS threads spin while they
    # wait), slowing both: libraries loaded from now on read the variables, and those
    # already loaded (numpy's OpenBLAS) are limited through threadpoolctl.
    os.environ.update(_ONE_THREAD)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def _unpack(result: tuple[Any, ...], index: int, where: str) -> Any:
    kind, *rest = result
    if kind == "ok":
        return rest[0]
    if kind == "privsim":
        name, message, party, round_ = rest
        cls = getattr(errors, name, PrivsimError)
        raise cls(message, party, round_) if cls is errors.PartyFailure else cls(message)
    raise ExecutorError(f"batch {index} failed {where}: {rest[0]}; the run is incomplete and no result is reported")


class _Submitted(Iterator[Any]):
    # The results of a map whose tasks were all submitted: iterate for them in order;
    # close() gives up on the rest (tasks not yet started are cancelled).
    def __init__(self, results: Iterator[Any], cancel: Callable[[], None]) -> None:
        self._results, self._cancel = results, cancel

    def __next__(self) -> Any:
        check_interrupted()  # a signal swallowed where it landed (a __del__) stops the command here
        try:
            return next(self._results)
        except KeyboardInterrupt:  # Ctrl-C in a script: the running batches are not waited for
            end_workers()
            raise

    def close(self) -> None:
        self._results.close()
        self._cancel()


class Executor:
    """Maps a function over items, yielding results in order. Use as a context manager.

    >>> with LocalExecutor() as ex:
    ...     list(ex.map(lambda v: v * v, [1, 2, 3]))
    [1, 4, 9]
    """

    name = "base"
    workers = 1

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """Apply ``fn`` to every item; results come back in the items' order.

        Executors with workers submit every item at once (before the first result is
        asked for), so two maps run side by side; the local executor runs each item
        when its result is asked for. Closing the returned iterator (``.close()``) gives
        up on the results not yet taken."""
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
            check_interrupted()  # a signal swallowed where it landed (e.g. over TCP) stops before the next batch
            yield fn(item)


#: Live executors with worker processes, so that an interrupted command can end their workers at once.
_LIVE: weakref.WeakSet[Executor] = weakref.WeakSet()


def end_workers() -> None:
    """End, now, the worker processes that live :class:`ProcessExecutor` pools and the
    LocalClusters of :class:`DaskExecutor` started (on SIGINT/SIGTERM: ``close()`` would
    otherwise wait for the batches they are running). No other process is touched: a
    caller's own child processes keep running.

    A process pool's workers get SIGTERM, which stops the task they run (a worker killed
    while it writes a result would leave the pool's reader waiting for ever on half a
    message); a batch queued behind it is not started, and ``close()`` then returns as soon
    as the workers have left. Dask's workers are killed (its scheduler expects that).

    Example: the ``privsim`` command's SIGINT/SIGTERM handler calls ``end_workers()``
    before it unwinds (see :func:`privsim.cli_support.interruptible`).
    """
    if "distributed" in sys.modules:  # the nannies and the scheduler would log the workers' deaths
        for name in ["distributed", *logging.root.manager.loggerDict]:
            if name == "distributed" or name.startswith("distributed."):
                logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    for ex in list(_LIVE):
        ex._end_workers()  # type: ignore[attr-defined]


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError, TypeError):  # already gone
            os.kill(pid, sig)


def _submit(pool: ProcessPoolExecutor, blobs: list[Task | None]) -> list[Any]:
    """Hand the batches to the pool; a batch the pool refused is None. A worker that dies on
    one batch while later ones are still handed out breaks the pool under the submitting
    loop: the results' loop then rebuilds it and runs those batches again."""
    futures: list[Any] = []
    for blob in blobs:
        try:
            futures.append(pool.submit(_run_blob, blob))
        except BrokenProcessPool:
            return futures + [None] * (len(blobs) - len(futures))
    return futures


class ProcessExecutor(Executor):
    """A pool of worker processes on this machine (default: one per core), each limited
    to one thread in numerical libraries (OpenBLAS, MKL, OpenMP) so they do not
    oversubscribe the cores.

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
        self._ended = False  # end_workers() stopped the pool's workers

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # Fresh interpreters (not forks of a parent that may hold threads and a large heap).
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_init_worker)
            _LIVE.add(self)
        return self._pool

    def _worker_pids(self) -> list[int]:
        return list(getattr(self._pool, "_processes", None) or {})  # pid -> Process (concurrent.futures)

    def _end_workers(self) -> None:
        # SIGTERM stops each worker's task (_on_stop); the next map builds a fresh pool
        _signal_all(self._worker_pids(), signal.SIGTERM)
        self._ended = True

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        blobs = _tasks(fn, items)
        if self._ended:  # its workers were stopped: a fresh pool
            self.close()
        pool = self._get_pool()
        futures = _submit(pool, blobs)
        return _Submitted(self._results(blobs, futures, pool), lambda: [f.cancel() for f in futures if f is not None])

    def _results(self, blobs: list[Task | None], futures: list[Any], pool: ProcessPoolExecutor) -> Iterator[Any]:
        for index, fut in enumerate(futures):
            try:
                if fut is None:
                    raise BrokenProcessPool("the pool broke before this batch was submitted")
                blob = fut.result()
            except (BrokenProcessPool, CancelledError):
                # A worker died (killed, out of memory), or the pool was rebuilt under
                # another map's feet: rebuild the pool if it is still the broken one and
                # retry this batch once, here, before giving up on the run.
                if self._pool is pool:
                    # Its workers are of no use now, and one idle when the pool broke does not
                    # exit on the pool's SIGTERM (_on_stop only marks it stopping), so the
                    # pool's shutdown would wait for it for ever: they are killed first.
                    _signal_all(self._worker_pids(), signal.SIGKILL)
                    self.close()
                pool = self._get_pool()
                try:
                    blob = pool.submit(_run_blob, blobs[index]).result()
                except (BrokenProcessPool, CancelledError) as exc:
                    raise ExecutorError(f"batch {index}: a worker process died twice; the run is incomplete "
                                        "and no result is reported") from exc
                futures[index + 1:] = _submit(pool, blobs[index + 1:])
            except Interrupted as exc:  # end_workers() stopped it (the caller is being interrupted)
                if interrupted() is not None:  # the command's own signal: it unwinds as interrupted
                    raise
                raise ExecutorError(f"batch {index} was stopped by end_workers(); the run is incomplete "
                                    "and no result is reported") from exc
            futures[index] = blobs[index] = fut = None  # a result taken is not held twice
            yield _unpack(cloudpickle.loads(blob), index, "in a worker process")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._ended = False


class DaskExecutor(Executor):
    """Batches on a dask.distributed cluster: an existing one (``scheduler="tcp://HOST:PORT"``)
    or, by default, a LocalCluster on this machine (loopback only, one single-threaded
    worker process per core). A batch whose worker dies runs again on another worker, up to
    the scheduler's ``allowed-failures`` (3 by default); ``retries`` re-runs a task that
    raised in the worker before privsim could catch it (its blob did not unpickle there).

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
        self._scratch: str | None = None
        import dask

        # Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_ set, which turns off
        # glibc's adaptive mmap threshold: every array over 128 KiB is then a fresh mmap,
        # and the page faults made numpy about 45% slower in our workers. Unset it for the
        # clusters we start (an existing cluster keeps its own settings); and their workers
        # do not sample stacks for Dask's profiler (every 10 ms by default, taking the
        # interpreter lock from the task: 5-15% of an audit's time here).
        environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
        environ.pop("MALLOC_TRIM_THRESHOLD_", None)
        # Nor do they log to the terminal (a variable of the caller's own wins): on a loaded
        # machine a worker logs a transient comm error with a traceback that Dask recovers
        # from, in the middle of the progress bar; a task's failure or a lost worker reaches
        # privsim through its future, and is reported in one line.
        environ["DASK_LOGGING__DISTRIBUTED"] = "critical"
        self._cluster_config = {"distributed.nanny.pre-spawn-environ": environ,
                                "distributed.worker.profile.enabled": False}
        self._cluster_workers = int(workers or os.cpu_count() or 1)
        try:
            if scheduler:
                self._client = Client(scheduler, timeout="20s")
            else:
                # The workers' scratch space in a folder of our own, removed on close (Dask
                # would leave dask-scratch-space behind in TMPDIR).
                self._scratch = tempfile.mkdtemp(prefix="privsim-dask-")
                with dask.config.set({**self._cluster_config, "temporary-directory": self._scratch}):
                    self._cluster = LocalCluster(n_workers=self._cluster_workers,
                                                 threads_per_worker=1, processes=True, host="127.0.0.1",
                                                 dashboard_address=None, local_directory=self._scratch)
                # Results come straight from the workers, not relayed by the scheduler
                # (which, in this process too, would receive and send every byte again).
                self._client = Client(self._cluster, direct_to_workers=True)
                _LIVE.add(self)
        except OSError as exc:
            raise ExecutorError(f"dask: cannot reach the scheduler {scheduler!r}: {exc}") from None
        self.workers = len(self._client.scheduler_info().get("workers", {})) or 1

    def _end_workers(self) -> None:
        # Kills the worker processes our LocalCluster's nannies started (none for a remote scheduler's: no
        # _cluster); the scheduler reruns or reports the lost tasks.
        nannies = list(getattr(self._cluster, "workers", {}).values())
        _signal_all([pid for pid in (getattr(nanny, "pid", None) for nanny in nannies) if pid], signal.SIGKILL)

    #: Seconds a result may take before the executor asks whether the cluster still works
    #: on it (see :meth:`_wait`).
    stall_seconds = 10.0

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        blobs: list[Task | None] = list(_tasks(fn, items))
        futures = [self._submit(b) for b in blobs]
        return _Submitted(self._results(blobs, futures), lambda: self._cancel(futures))

    def _submit(self, blob: Task | None) -> Any:
        return self._client.submit(_run_task, blob, retries=self.retries, pure=False)

    def _results(self, blobs: list[Task | None], futures: list[Any]) -> Iterator[Any]:
        for index in range(len(futures)):
            try:
                result = self._wait(blobs, futures, index)
            except Exception as exc:  # the worker died `retries + 1` times (KilledWorker) or was lost
                self._cancel(futures)
                raise ExecutorError(f"batch {index} failed on the dask cluster: {type(exc).__name__}: {exc}; "
                                    "the run is incomplete and no result is reported") from None
            futures[index] = blobs[index] = None  # released: the worker frees the result
            try:
                yield _unpack(result, index, "on the dask cluster")
            except PrivsimError:
                self._cancel(futures)
                raise

    def _wait(self, blobs: list[Task | None], futures: list[Any], index: int) -> Any:
        # When a result is late, a LocalCluster that lost workers for good gets them back
        # (see _restore_workers); and if no worker processes anything, the unfinished tasks
        # of the map are submitted again (the same blobs, so the same results): a task can
        # stay pending for good after its worker died (dask/distributed#6263).
        while True:
            try:
                return futures[index].result(timeout=self.stall_seconds)
            except TimeoutError:
                self._restore_workers()
                if any(self._client.processing().values()):
                    continue
                for k in range(index, len(futures)):
                    if futures[k] is not None and not futures[k].done():
                        self._cancel([futures[k]])
                        futures[k] = self._submit(blobs[k])

    def _restore_workers(self) -> None:
        # A LocalCluster closes the nanny of a worker that is still missing
        # `distributed.deploy.lost-worker-timeout` (15 s) after it was lost, even when that
        # nanny is restarting the worker at that moment: a worker that dies twice 15 s apart
        # is then gone for good. Our worker-death tests met it with both workers (CI hung):
        # start the missing ones again, with the settings the cluster was started with.
        if self._cluster is None or len(self._client.scheduler_info()["workers"]) >= self._cluster_workers:
            return
        import dask

        with dask.config.set(self._cluster_config):  # the nannies read it when they start
            self._cluster.scale(self._cluster_workers)
            # Not all back in time, or one more was closed meanwhile (its nanny was still
            # restarting when scale() looked): the next stall check scales again.
            with contextlib.suppress(TimeoutError):
                self._client.wait_for_workers(self._cluster_workers, timeout=self.stall_seconds)

    def _cancel(self, futures: list[Any]) -> None:
        with contextlib.suppress(Exception):  # best effort
            self._client.cancel([f for f in futures if f is not None])

    def close(self) -> None:
        try:
            self._client.close()
            if self._cluster is not None:
                self._cluster.close()
        finally:
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)


def get_executor(kind: str | Executor | None = "local", *, scheduler: str | None = None,
                 workers: int | None = None) -> Executor:
    """An executor by name: ``local``, ``processes`` or ``dask`` (an :class:`Executor` passes through).

    >>> get_executor("local").name
    'local'
    """
    if isinstance(kind, Executor):
        return kind
    kind = kind or "local"
    if scheduler and kind in ("local", "processes"):
        raise ParameterError("--scheduler is only for --executor dask")
    if kind == "local":
        return LocalExecutor()
    if kind == "processes":
        return ProcessExecutor(workers)
    if kind == "dask":
        return DaskExecutor(scheduler, workers)
    raise ParameterError(f"executor must be one of {', '.join(EXECUTORS)} (got {kind!r})")
