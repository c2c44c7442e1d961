"""Executors: identical results for one seed under local, processes and Dask; failures reported."""

from __future__ import annotations

import multiprocessing
import os
import sys
import time

import cloudpickle
import numpy as np
import pytest

from privsim import CURATOR, Schedule
from privsim.analysis.audit import audit
from privsim.errors import ExecutorError, PartyFailure
from privsim.executors import DaskExecutor, ProcessExecutor, get_executor
from privsim.protocols import RandomizedResponse
from privsim.protocols.base import Protocol
from privsim.simulate import run_trials

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # test-only protocols travel by value
PARENT = os.getpid()
X = (np.arange(12) % 3 == 0).astype(int)


class DiesInWorkers(Protocol):
    """Kills the process it runs in, unless that is the test process."""

    name = "dies-in-workers"
    has_curator = True

    def schedule(self, n, t):
        return Schedule.star_to(n)

    async def party(self, ctx):
        if os.getpid() != PARENT:
            os._exit(3)
        ctx.send(CURATOR, ctx.input)
        await ctx.end_round()

    async def curator(self, ctx):
        ctx.output((await ctx.end_round()).total())

    def estimate(self, outputs, n, t):
        return outputs[CURATOR]


class Raises(DiesInWorkers):
    name = "raises"

    async def party(self, ctx):
        raise ValueError("bad party")


@pytest.fixture(scope="module")
def dask_executor():
    ex = DaskExecutor(workers=2)
    yield ex
    ex.close()


@pytest.fixture(scope="module")
def pool():
    """One pool for the tests that do not kill its workers."""
    with ProcessExecutor(workers=2) as ex:
        yield ex


#: The audit every executor must reproduce: 1024-trial batches, 4 selection and 16
#: estimation batches per input (the ninth batch run is the first estimation batch).
AUDIT = {"coalition": "C", "neighbor": 3, "trials": 20_000, "seed": 4}


@pytest.fixture(scope="module")
def reference():
    """The one-process result of :data:`AUDIT`."""
    return audit(RandomizedResponse(epsilon=1.0), X, **AUDIT).to_dict()


def test_run_identical_across_executors_and_batch_splits(dask_executor):
    proto = RandomizedResponse(epsilon=1.0)
    ref = run_trials(proto, X, trials=5000, seed=9)
    for executor, batch in (("processes", 1024), ("processes", 2048), (dask_executor, 1024), ("local", 3072)):
        other = run_trials(proto, X, trials=5000, seed=9, executor=executor, batch_trials=batch)
        assert np.array_equal(other.estimate, ref.estimate)
        assert (other.messages, other.bits, other.rounds) == (ref.messages, ref.bits, ref.rounds)


def test_audit_identical_across_executors(dask_executor, pool, reference):
    assert audit(RandomizedResponse(epsilon=1.0), X, executor=pool, **AUDIT).to_dict() == reference
    assert audit(RandomizedResponse(epsilon=1.0), X, executor=dask_executor, **AUDIT).to_dict() == reference


@pytest.mark.parametrize("which", ["pool", "dask_executor"])
def test_a_map_pickles_its_function_once_and_a_worker_loads_it_once(which, request):
    ex = request.getfixturevalue(which)
    calls: list[int] = []

    def count(_):  # a closure: pickled by value, so each unpickling gives a fresh list
        calls.append(1)
        return os.getpid(), len(calls)

    out = list(ex.map(count, range(12)))
    per_worker: dict[int, list[int]] = {}
    for pid, seen in out:
        per_worker.setdefault(pid, []).append(seen)
    # one function object per worker and map: its calls count up (one unpickling per task: all 1)
    assert all(sorted(s) == list(range(1, len(s) + 1)) for s in per_worker.values()), per_worker
    assert [s for _, s in ex.map(count, range(2))][0] == 1  # a new map, a fresh function


class _FirstTaskStuck(DaskExecutor):
    """Submits its first task for a worker that does not exist: it stays pending with
    nothing running, as a task lost with a dead worker can (dask/distributed#6263)."""

    stall_seconds = 0.5

    def __init__(self, inner: DaskExecutor) -> None:
        self.__dict__.update(inner.__dict__)
        self.stuck = 0

    def _submit(self, blob):
        if self.stuck:
            return super()._submit(blob)
        self.stuck += 1
        return self._client.submit(cloudpickle.loads, blob, workers=["tcp://127.0.0.1:9"], pure=False)


def test_a_stalled_dask_task_is_submitted_again(dask_executor):
    ex = _FirstTaskStuck(dask_executor)
    assert list(ex.map(abs, [-1, -2, -3])) == [1, 2, 3]
    assert ex.stuck == 1


class _Restores(DaskExecutor):
    """Records how many workers the cluster had each time it was repaired."""

    stall_seconds = 0.5

    def __init__(self, inner: DaskExecutor) -> None:
        self.__dict__.update(inner.__dict__)
        self.seen: list[int] = []

    def _restore_workers(self):
        self.seen.append(len(self._client.scheduler_info()["workers"]))
        super()._restore_workers()


def test_a_dask_cluster_that_closed_its_lost_workers_gets_them_back(dask_executor, tmp_path):
    # With lost-worker-timeout 0, the LocalCluster closes a dead worker's nanny while it
    # restarts the worker, as it does at 15 s when a worker dies twice 15 s apart (which
    # hung CI): both workers die in the first two runs, and the run must not wait forever.
    import dask

    proto = DiesOnce(epsilon=1.0)
    proto.marker, proto.dies = str(tmp_path / "run"), 2
    ex = _Restores(dask_executor)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": 0}):
        got = run_trials(proto, X, trials=4096, seed=2, executor=ex).summary()
    # Both died (the two workers usually at once, leaving the cluster empty), and the
    # cluster was found short of workers and repaired.
    assert os.path.exists(f"{proto.marker}-1") and min(ex.seen) < 2
    ex._restore_workers()  # a no-op unless a death came after the last repair
    assert len(ex._client.scheduler_info()["workers"]) == 2
    assert {**got, "executor": "local"} == run_trials(RandomizedResponse(epsilon=1.0), X, trials=4096,
                                                      seed=2).summary() | {"protocol": got["protocol"]}


def test_dead_worker_process_is_reported_not_hidden():
    with pytest.raises(ExecutorError, match="batch 0: a worker process died twice"):
        run_trials(DiesInWorkers(), X, trials=100, seed=1, executor="processes", workers=1)


def test_dead_dask_worker_is_reported(dask_executor):
    with pytest.raises(ExecutorError, match="batch 0 failed on the dask cluster.*no result is reported"):
        run_trials(DiesInWorkers(), X, trials=100, seed=1, executor=dask_executor)


def _worker_logs_an_error(x: int) -> str | None:
    import logging

    logging.getLogger("distributed.worker").error("a worker's own log line %d", x)
    return os.environ.get("DASK_LOGGING__DISTRIBUTED")


def test_dask_workers_of_our_cluster_do_not_log_to_the_terminal(dask_executor, capfd):
    # (a loaded machine's transient comm errors came with tracebacks, mid progress bar)
    capfd.readouterr()
    assert list(dask_executor.map(_worker_logs_an_error, [1, 2])) == ["critical", "critical"]
    assert "a worker's own log line" not in "".join(capfd.readouterr())


def test_party_failure_in_a_worker_keeps_its_message():
    with pytest.raises(PartyFailure, match="party 0 failed in round 1: ValueError: bad party"):
        run_trials(Raises(), X, trials=100, seed=1, executor="processes", workers=1)


def test_unknown_executor():
    from privsim.errors import ParameterError

    with pytest.raises(ParameterError, match="executor must be one of local, processes, dask"):
        get_executor("threads")
    with pytest.raises(ParameterError, match="--scheduler is only for --executor dask"):
        get_executor("processes", scheduler="tcp://127.0.0.1:1")


def _blas_threads(_):
    import scipy.linalg  # noqa: F401  (loads scipy's own OpenBLAS too)
    from threadpoolctl import threadpool_info

    return {info["num_threads"] for info in threadpool_info()}


def test_worker_processes_are_single_threaded(pool):
    assert list(pool.map(_blas_threads, [0])) == [{1}]


def test_failed_event_choice_leaves_the_pool_usable(monkeypatch, pool):
    import privsim.analysis.audit as audit_module

    def fails(*args, **kwargs):
        raise ValueError("no event")

    monkeypatch.setattr(audit_module, "choose_events", fails)
    with pytest.raises(ValueError, match="no event"):
        audit(RandomizedResponse(epsilon=1.0), X, executor=pool, **AUDIT)
    assert list(pool.map(abs, [-1, -2])) == [1, 2]  # no task of the failed audit is left behind


def _blas_thread_counts():
    from threadpoolctl import threadpool_info

    return {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def test_audit_chooses_and_counts_with_one_blas_thread(monkeypatch):
    import privsim.analysis.audit as audit_module

    seen = []
    choose = audit_module.choose_events

    def recording(*args, **kwargs):
        seen.append(_blas_thread_counts())
        return choose(*args, **kwargs)

    monkeypatch.setattr(audit_module, "choose_events", recording)
    before = _blas_thread_counts()
    audit(RandomizedResponse(epsilon=1.0), X, coalition="C", neighbor=3, trials=20_000, seed=4)
    assert seen == [{1}]
    assert _blas_thread_counts() == before  # restored afterwards


class DiesOnce(RandomizedResponse):
    """Randomized response whose ``die_at``-th batch run in a worker process kills its process."""

    marker = ""
    die_at = 0
    dies = 1  # the runs die_at, ..., die_at + dies - 1 die

    async def party(self, ctx):
        if os.getpid() != PARENT and ctx.id == 0:
            k = 0
            while True:  # count this batch run: the first free k
                try:
                    os.close(os.open(f"{self.marker}-{k}", os.O_CREAT | os.O_EXCL))
                    break
                except FileExistsError:
                    k += 1
            if self.die_at <= k < self.die_at + self.dies:
                os._exit(3)
        await super().party(ctx)


def test_a_pool_broken_while_batches_are_handed_out_runs_them_again(monkeypatch):
    # A worker that dies on one batch while the map still submits later ones breaks the pool
    # under the submitting loop (CI saw BrokenProcessPool raised by submit() itself in
    # test_audit_survives_a_worker_death[processes-8]). Here the second submit() refuses.
    from concurrent.futures.process import BrokenProcessPool

    ex = ProcessExecutor(workers=1)
    pool = ex._get_pool()
    real, calls = pool.submit, []

    def submit(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise BrokenProcessPool("a worker died while the batches were handed out")
        return real(*args, **kwargs)

    monkeypatch.setattr(pool, "submit", submit)
    try:
        assert list(ex.map(abs, [-1, -2, -3])) == [1, 2, 3]
        assert ex._pool is not pool  # rebuilt
    finally:
        ex.close()


@pytest.mark.parametrize("die_at", [0, 8])
@pytest.mark.parametrize("kind", ["processes", "dask"])
def test_audit_survives_a_worker_death(kind, die_at, dask_executor, reference, tmp_path):
    # The death hits a selection batch (the first run) or an estimation batch (the ninth:
    # 8 selection batches come first): the batch is retried and the audit ends with the
    # one-process result, without hanging.
    proto = DiesOnce(epsilon=1.0)
    proto.marker, proto.die_at = str(tmp_path / "run"), die_at
    ex = ProcessExecutor(workers=2) if kind == "processes" else dask_executor
    try:
        got = audit(proto, X, executor=ex, **AUDIT).to_dict()
    finally:
        if kind == "processes":
            ex.close()
    assert os.path.exists(f"{proto.marker}-{die_at + 1}")  # the worker died, and runs went on
    assert {k: v for k, v in got.items() if k != "protocol"} == {k: v for k, v in reference.items()
                                                                 if k != "protocol"}


def test_end_workers_ends_the_pools_workers_and_leaves_the_callers_child_alone():
    from privsim.executors import end_workers

    own = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(60,))
    own.start()
    try:
        ex = ProcessExecutor(workers=1)
        assert list(ex.map(abs, [-1])) == [1]
        pids = ex._worker_pids()
        assert pids
        end_workers()
        ex.close()  # the stopped workers leave at once and the pool reaps them
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_running(p) for p in pids):
            time.sleep(0.05)
        assert not any(_running(p) for p in pids), "the pool's worker outlived end_workers()"
        assert own.is_alive(), "end_workers() killed a process the caller started"
        assert list(ex.map(abs, [-3])) == [3]  # the executor goes on with a fresh pool
        ex.close()
    finally:
        own.kill()
        own.join()


def test_end_workers_stops_a_running_batch_without_breaking_the_pool():
    # SIGTERM stops the task (a worker killed mid-write would leave the pool's reader
    # waiting for ever): the batch fails as stopped, long before it would have ended.
    from privsim.executors import end_workers

    ex = ProcessExecutor(workers=1)
    assert list(ex.map(abs, [-1])) == [1]  # the worker is up
    results = ex.map(time.sleep, [600, 600])
    time.sleep(0.5)  # (the first batch is running or about to; either way it must not run on)
    start = time.monotonic()
    end_workers()
    with pytest.raises(ExecutorError, match="batch 0 was stopped by end_workers"):
        next(results)
    ex.close()  # the queued batch is not started: close() returns once the worker has left
    assert time.monotonic() - start < 300, "the running batch was not stopped"


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
