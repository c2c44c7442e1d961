"""The derived selector's families at 10^6 trials per input (issue 24).

Run: ``privsim bench --only audit_derived`` (or ``python bench/bench_audit_derived.py``;
prints one JSON object). Per family, one leak of its shape (the test protocols of
tests/test_audit_derived.py at full size), audited on the generic path (no score) with
every selector, and with every selector but ``derived`` (what the audit found before):

- atoms: a Laplace(x, 1) message that with probability 10^-3 is x itself, at delta = 10^-4
  (the claim (1, 10^-4) is false: the true delta at eps 1 is 10^-3);
- int bit: a 16-bit uniform value whose bit 5 is x with probability 0.6 (loss ln 4);
- float bit: a float64 whose lowest mantissa bit is x with probability 0.6 (ln 4);
- parity: three bytes whose low bits XOR to x's randomized response at eps 2 (loss 2);
- parity3_bit3, parity3_mixed: three 16-bit values whose bit 3 (bits 3, 9 and 14) XOR to
  the same randomized response (loss 2);
- shares: x's randomized response at eps 1, times 4096, in two shares mod 2^16 (loss 1);
- shares3: the same in three shares mod 2^16 (any two independent of x; loss 1);
- variance: N(0, 3^2) under x, N(0, 1) under x', at delta 10^-6.

``time_ratio``: the leak cases' audits with every selector over the same audits without
``derived``, one after the other in this process (on these one- to three-column views the
simulation costs next to nothing, so this is the selector's cost at its most visible).
``scenarios``: the bundled audit scenarios matching ``PRIVSIM_BENCH_DERIVED_SCENARIOS``
(comma-separated globs; default :data:`SCENARIOS`) at 10^6 trials, with every selector and
without ``derived``: both bounds, and the ratio of their times.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable

import numpy as np

from privsim.analysis.audit import audit_batches
from privsim.analysis.audit_selectors import SELECTORS

TRIALS = 10**6
ROWS = 50_000
SELECT, ESTIMATE = 4, 16  # 20 % of the trials select the event
SEED = 2024

Sampler = Callable[[str, int], np.ndarray]


def _rng(seed: int, which: str, index: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, 0 if which == "x" else 1)))


def _rr(rng: np.random.Generator, bit: int, keep: float, rows: int) -> np.ndarray:
    return np.where(rng.random(rows) < keep, bit, 1 - bit).astype(np.int64)


def atom(seed: int, rows: int) -> Sampler:
    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), 1.0 if which == "x" else 0.0
        return np.where(rng.random(rows) < 1e-3, x, x + rng.laplace(0.0, 1.0, rows))[:, None]
    return sample


def int_bit(seed: int, rows: int) -> Sampler:
    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), 1 if which == "x" else 0
        y = rng.integers(0, 1 << 16, rows)
        return np.where(rng.random(rows) < 0.6, (y & ~(1 << 5)) | (x << 5), y)[:, None].astype(float)
    return sample


def float_bit(seed: int, rows: int) -> Sampler:
    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), np.uint64(1 if which == "x" else 0)
        words = np.uint64(0x3FF0000000000000) | rng.integers(0, 1 << 52, rows, dtype=np.uint64)
        return np.where(rng.random(rows) < 0.6, (words & ~np.uint64(1)) | x, words).view(np.float64)[:, None]
    return sample


def parity(seed: int, rows: int) -> Sampler:
    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), 1 if which == "x" else 0
        low = rng.integers(0, 2, (rows, 3))
        low[:, 2] = low[:, 0] ^ low[:, 1] ^ _rr(rng, x, math.exp(2) / (1 + math.exp(2)), rows)
        return (2 * rng.integers(0, 128, (rows, 3)) + low).astype(float)
    return sample


def high_parity(positions: tuple[int, int, int]) -> Callable[[int, int], Sampler]:
    """Three uniform 16-bit values whose bits at ``positions`` XOR to x's randomized
    response at eps 2 (each message, and each pair, independent of x)."""
    def make(seed: int, rows: int) -> Sampler:
        def sample(which: str, index: int) -> np.ndarray:
            rng, x = _rng(seed, which, index), 1 if which == "x" else 0
            m = rng.integers(0, 1 << 16, (rows, 3))
            bits = [(m[:, i] >> k) & 1 for i, k in enumerate(positions)]
            want = bits[0] ^ bits[1] ^ _rr(rng, x, math.exp(2) / (1 + math.exp(2)), rows)
            m[:, 2] = (m[:, 2] & ~(1 << positions[2])) | (want << positions[2])
            return m.astype(float)
        return sample
    return make


def shares(seed: int, rows: int) -> Sampler:
    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), 1 if which == "x" else 0
        first = rng.integers(0, 1 << 16, rows)
        second = np.mod(4096 * _rr(rng, x, math.e / (1 + math.e), rows) - first, 1 << 16)
        return np.column_stack([first, second]).astype(float)
    return sample


def shares3(seed: int, rows: int) -> Sampler:
    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), 1 if which == "x" else 0
        first, second = rng.integers(0, 1 << 16, (2, rows))
        third = np.mod(4096 * _rr(rng, x, math.e / (1 + math.e), rows) - first - second, 1 << 16)
        return np.column_stack([first, second, third]).astype(float)
    return sample


def variance(seed: int, rows: int) -> Sampler:
    def sample(which: str, index: int) -> np.ndarray:
        return _rng(seed, which, index).normal(0.0, 3.0 if which == "x" else 1.0, rows)[:, None]
    return sample


#: name: (sampler factory (seed, rows), columns, delta, exact loss at delta (None: not computed here)).
CASES: dict[str, tuple[Callable[[int, int], Sampler], list[str], float, float | None]] = {
    "atom": (atom, ["y"], 1e-4, None),
    "int_bit": (int_bit, ["y"], 0.0, math.log(4)),
    "float_bit": (float_bit, ["y"], 0.0, math.log(4)),
    "parity3": (parity, ["m0", "m1", "m2"], 0.0, 2.0),
    "parity3_bit3": (high_parity((3, 3, 3)), ["m0", "m1", "m2"], 0.0, 2.0),
    "parity3_mixed": (high_parity((3, 9, 14)), ["m0", "m1", "m2"], 0.0, 2.0),
    "shares": (shares, ["share 0", "share 1"], 0.0, 1.0),
    "shares3": (shares3, ["share 0", "share 1", "share 2"], 0.0, 1.0),
    "variance": (variance, ["y"], 1e-6, None),
}


SCENARIOS = "audit_central_laplace,audit_dist_alpha,audit_secure_sum_holders,audit_public_central_gaussian"


def _scenarios(pattern: str, without: tuple[str, ...]) -> dict[str, object]:
    import importlib.util
    from pathlib import Path

    from privsim.analysis.audit import audit

    path = Path(__file__).resolve().parent / "bench_audit_selectors.py"
    spec = importlib.util.spec_from_file_location("privsim_bench_audit_selectors_cases", path)
    cases = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(cases)  # type: ignore[union-attr]
    out: dict[str, object] = {}
    for case in cases._cases(pattern, examples=False):
        row: dict[str, object] = {}
        for label, selectors in (("all", None), ("before", without)):
            start = time.perf_counter()
            r = audit(trials=TRIALS, selectors=selectors, **case["kw"])
            row[f"seconds_{label}"] = round(time.perf_counter() - start, 1)
            row[f"epsilon_lower_{label}"] = round(r.epsilon_lower, 4)
            row[f"won_{label}"] = r.selection
        row["time_ratio"] = round(row["seconds_all"] / row["seconds_before"], 2)
        out[case["name"]] = row
    return out


def main() -> dict[str, object]:
    """Every case with every selector and without ``derived``; the time ratio."""
    out: dict[str, object] = {}
    spent = {"all": 0.0, "before": 0.0}
    without = tuple(s for s in SELECTORS if s != "derived")
    for name, (make, columns, delta, exact) in CASES.items():
        for label, selectors in (("all", None), ("before", without)):
            start = time.perf_counter()
            r = audit_batches(make(SEED, ROWS), SELECT, ESTIMATE, columns, delta=delta, selectors=selectors)
            spent[label] += time.perf_counter() - start
            out[f"{name}.{label}"] = round(r.epsilon_lower, 3)
            if label == "all":
                out[f"{name}.won"] = r.selection
                out[f"{name}.event"] = r.event
        if exact is not None:
            out[f"{name}.exact"] = round(exact, 3)
    out["trials"] = TRIALS
    out["time_ratio"] = round(spent["all"] / spent["before"], 2)
    out["scenarios"] = _scenarios(os.environ.get("PRIVSIM_BENCH_DERIVED_SCENARIOS", SCENARIOS), without)
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
