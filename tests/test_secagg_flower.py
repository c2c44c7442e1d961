"""privsim's SecAgg+ against Flower's SecAgg+ helpers (flwr, a test-only dependency, in the ``dev`` extra).

Flower's server and clients are driven here by hand with Flower's own helpers (quantize,
X25519/ECDH key agreement, Shamir shares, PRG, dequantize and the server's offset), on the
same inputs, the same neighbour graph, the same threshold and the same dropouts as a
privsim run; the released aggregate must be the same.
"""

from __future__ import annotations

import numpy as np
import pytest
from flwr.common.secure_aggregation.crypto.shamir import combine_shares, create_shares
from flwr.common.secure_aggregation.crypto.symmetric_encryption import generate_shared_key
from flwr.common.secure_aggregation.quantization import dequantize
from flwr.common.secure_aggregation.quantization import quantize as flower_quantize
from flwr.common.secure_aggregation.secaggplus_utils import pseudo_rand_gen
from flwr.supercore.primitives.asymmetric import (
    bytes_to_private_key,
    generate_key_pairs,
    private_key_to_bytes,
)

import privsim
from privsim.mechanisms.quantization import dequantize_sum, quantize
from privsim.protocols.secagg import SecAggPlus

CLIP, Q, M = 2.0, 2**10, 2**16  # clipping range, quantization range, modulus range (Flower's names)


def flower_secaggplus(quantized: list[int], neighbours: list[list[int]], threshold: int, dropped: set[int],
                      seed: int) -> float:
    """Flower's SecAgg+ arithmetic (client mod and server workflow), clients in `dropped` sending no masked
    input after sharing their keys; returns the dequantized aggregate of the survivors."""
    rng = np.random.default_rng(seed)
    n = len(quantized)
    keys = [generate_key_pairs() for _ in range(n)]
    seeds = [rng.bytes(32) for _ in range(n)]
    shares_of = {}  # (owner, holder) -> (share of the seed, share of the secret key)
    for u in range(n):
        holders = [u, *neighbours[u]]
        rd = create_shares(seeds[u], threshold, len(holders))
        sk = create_shares(private_key_to_bytes(keys[u][0]), threshold, len(holders))
        for h, a, b in zip(holders, rd, sk):
            shares_of[u, h] = (a, b)
    survivors = [u for u in range(n) if u not in dropped]
    total = np.array(0, dtype=np.int64)
    for u in survivors:  # the client mod: quantized + self mask + pairwise masks, mod M
        vec = np.array(quantized[u], dtype=np.int64) + pseudo_rand_gen(seeds[u], M, [()])[0]
        for v in neighbours[u]:
            mask = pseudo_rand_gen(generate_shared_key(keys[u][0], keys[v][1]), M, [()])[0]
            vec = vec + mask if u > v else vec - mask
        total = (total + vec) % M
    for w in range(n):  # the server's unmask stage, shares from surviving holders
        got = [shares_of[w, h] for h in [w, *neighbours[w]] if h in survivors][:threshold]
        assert len(got) >= threshold
        if w in survivors:
            total = (total - pseudo_rand_gen(combine_shares([a for a, _ in got]), M, [()])[0]) % M
        else:
            secret = bytes_to_private_key(combine_shares([b for _, b in got]))
            for v in neighbours[w]:
                if v in survivors:
                    mask = pseudo_rand_gen(generate_shared_key(secret, keys[v][1]), M, [()])[0]
                    total = (total + mask) % M if w > v else (total - mask) % M
    return float(dequantize([total % M], CLIP, Q)[0] + -(len(survivors) - 1) * CLIP)


def test_quantization_equals_flowers_on_the_grid_and_rounds_to_a_neighbour_off_it():
    grid = np.linspace(-CLIP, CLIP, 17)  # (x + c) Q / 2c is an integer: no randomness in either
    ours = quantize(np.random.default_rng(0), grid, CLIP, Q)
    assert ours.tolist() == flower_quantize([grid], CLIP, Q)[0].tolist()
    x = np.random.default_rng(1).uniform(-3, 3, 200)
    pre = (np.clip(x, -CLIP, CLIP) + CLIP) * Q / (2 * CLIP)
    ours = quantize(np.random.default_rng(2), x, CLIP, Q)
    assert ((ours == np.floor(pre)) | (ours == np.ceil(pre))).all()


@pytest.mark.parametrize("dropped", [set(), {2, 5}])
def test_the_aggregate_equals_flowers_secaggplus_on_the_same_inputs_graph_and_dropouts(dropped):
    n, k, t = 7, 4, 2
    x = np.random.default_rng(4).uniform(-CLIP, CLIP, n)
    quantized = quantize(np.random.default_rng(5), x, CLIP, Q)
    proto = SecAggPlus(k=k, max_input=Q, modulus=M, dropout=",".join(f"{u}@masked-input" for u in sorted(dropped))
                       or "0")
    res = privsim.simulate(proto, quantized, trials=1, seed=6, t=t)
    survivors = n - len(dropped)
    ours = float(dequantize_sum(res.estimate[0], survivors, CLIP, Q))
    theirs = flower_secaggplus(quantized.tolist(), proto.neighbours(n), t + 1, dropped, seed=7)
    assert ours == theirs
    assert abs(ours - x[[u for u in range(n) if u not in dropped]].sum()) <= survivors * 2 * CLIP / Q
