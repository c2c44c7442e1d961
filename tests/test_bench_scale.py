"""The scale benchmark's arithmetic: each executor run against the one-process runs around it."""

import pytest
from _bench import load_bench


@pytest.fixture(scope="module")
def bench_scale():
    return load_bench("scale")


def test_bracketing_cancels_a_steady_drift(bench_scale):
    # The machine slows by 20% per slot; every executor is truly 1.8x (processes) or 1.6x
    # (dask) faster than one process at the same moment. Comparing with the run before
    # alone would report 1.8 / sqrt(1.2) = 1.64x and 1.6 / sqrt(1.2) = 1.46x.
    local = [10.0 * 1.2**k for k in range(0, 9, 2)]  # slots 0, 2, 4, 6, 8
    speedup = {"processes": 1.8, "dask": 1.6}
    runs = [(name, 10.0 * 1.2**slot / speedup[name])
            for name, slot in zip(["processes", "dask"] * 2, range(1, 9, 2))]
    ratios = bench_scale.bracketed_speedups(local, runs)
    assert ratios.keys() == speedup.keys()
    for name, values in ratios.items():
        assert values == pytest.approx([speedup[name]] * 2, rel=1e-12)


def test_bracketing_needs_one_more_one_process_run(bench_scale):
    with pytest.raises(ValueError, match="one more one-process run"):
        bench_scale.bracketed_speedups([10.0, 11.0], [("processes", 5.0), ("dask", 6.0)])
