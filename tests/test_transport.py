"""Over TCP, every party its own process: the same outputs and transcript as in process;
faults stop the run naming party and round and leave no process; hostile bytes are refused."""

from __future__ import annotations

import json
import logging
import os
import socket
import sys

import numpy as np
import pytest
import trio
from _bench import load_bench
from helpers_transport import Relay
from hypothesis import given, settings
from hypothesis import strategies as st

import privsim
from privsim import ParameterError, PartyFailure, ScheduleViolation
from privsim.cli import main
from privsim.network.schedule import party_ids
from privsim.protocols import REGISTRY, get_protocol
from privsim.transport import PartyReport, PeersConfig, TcpTransport, run_party
from privsim.transport.framing import (
    HEADER,
    HELLO,
    MAGIC,
    MESSAGE,
    FrameError,
    decode_value,
    encode_value,
    frame,
    parse_header,
)
from privsim.transport.link import connect_peer

SETTINGS = [("secure-sum", 5, 2), ("ck-sum", 5, 2), ("randomized-response-distributed", 5, None)]


def same_bits(a, b):
    if isinstance(a, (tuple, list)):  # e.g. dist-alpha's output (result, S)
        return type(a) is type(b) and len(a) == len(b) and all(map(same_bits, a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def assert_same_run(local, tcp):
    assert (tcp.messages, tcp.bits, tcp.rounds) == (local.messages, local.bits, local.rounds)
    assert set(tcp.outputs) == set(local.outputs)
    for pid, out in local.outputs.items():
        assert same_bits(out, tcp.outputs[pid]), pid
    assert len(tcp.transcript) == len(local.transcript)
    for r, (mine, theirs) in enumerate(zip(local.transcript, tcp.transcript), start=1):
        assert set(mine) == set(theirs), r
        for d, box in mine.items():
            assert list(box) == list(theirs[d]), (r, d)  # ordered by sender
            assert all(same_bits(v, theirs[d][s]) for s, v in box.items()), (r, d)
    assert local.draws.keys() == tcp.draws.keys()
    for pid, draws in local.draws.items():
        assert len(draws) == len(tcp.draws[pid]) and all(map(same_bits, draws, tcp.draws[pid]))
    assert same_bits(local.estimate, tcp.estimate)


def children():
    """Live (or unreaped) child processes of this test process."""
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    stat = fh.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                out.add(int(entry))
    return out


@pytest.mark.parametrize("name, n, t", SETTINGS, ids=[s[0] for s in SETTINGS])
def test_tcp_run_is_the_in_process_run(name, n, t):
    proto = get_protocol(name)
    local = privsim.simulate(proto, None, n=n, t=t, trials=3, seed=7)
    tcp = privsim.simulate(proto, None, n=n, t=t, trials=3, seed=7, transport="tcp")
    assert_same_run(local, tcp)
    coalition = "0,1"
    assert same_bits(local.view(coalition).to_array()[0], tcp.view(coalition).to_array()[0])
    # every message crosses the wire with its header and tag: bytes >= payload bits / 8
    assert tcp.wire_bytes >= local.bits * 3 / 8 + local.messages * (HEADER.size + 32)
    assert tcp.summary() == {**local.summary(), "wire_bytes": tcp.wire_bytes}


def test_every_builtin_protocol_runs_over_tcp_as_in_process():
    for name in sorted(REGISTRY):
        proto = get_protocol(name, **({"T": 4} if "T" in REGISTRY[name].params else {}))  # few rounds
        local = privsim.simulate(proto, None, n=4, trials=2, seed=4)
        assert_same_run(local, privsim.simulate(proto, None, n=4, trials=2, seed=4, transport="tcp"))


def test_a_coalition_records_only_its_view():
    proto = get_protocol("randomized-response-distributed")
    local = privsim.simulate(proto, [1, 0, 1], trials=2, seed=3, coalition="1")
    tcp = privsim.simulate(proto, [1, 0, 1], trials=2, seed=3, coalition="1", transport="tcp")
    assert_same_run(local, tcp)
    assert tcp.draws.keys() == {1}


@pytest.mark.parametrize("fault, timeout, text", [
    ("die", 2.0, "party 1 was killed by SIGKILL in round 2: party 1 disconnected in round 2"),
    ("hang", 1.0, "party 1 sent nothing in round 2 for 1 s"),  # then the launcher kills it
])
def test_a_party_that_dies_or_hangs_stops_the_run_and_leaves_no_process(fault, timeout, text):
    before = children()
    with pytest.raises(PartyFailure) as info:
        privsim.simulate(Relay(fault=fault), np.arange(3), trials=2, seed=1, transport=TcpTransport(timeout=timeout))
    assert str(info.value).startswith(text)
    assert (info.value.party, info.value.round) == (1, 2)
    assert children() <= before


def test_a_missing_output_is_named_as_in_process():
    # the estimator's KeyError is one line naming the party and the round, over TCP too
    messages = []
    for transport in ("local", TcpTransport(timeout=30)):
        with pytest.raises(PartyFailure, match=r"party 1, round 4: finished without an output") as caught:
            privsim.simulate(Relay(fault="no-output"), np.arange(3), trials=2, seed=1, transport=transport)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_a_routine_error_is_reported_as_in_process():
    with pytest.raises(PartyFailure) as local:
        privsim.simulate(Relay(fault="raise"), np.arange(3), seed=1)
    with pytest.raises(PartyFailure) as tcp:
        privsim.simulate(Relay(fault="raise"), np.arange(3), seed=1, transport="tcp")
    assert str(tcp.value) == str(local.value) == "party 1 failed in round 2: RuntimeError: boom"


def test_cli_run_over_tcp_prints_the_same_json_plus_wire_bytes(capsys):
    args = ["run", "--protocol", "ck-sum", "--n", "4", "--t", "1", "--trials", "4", "--seed", "2", "--json"]
    main(args)
    local = json.loads(capsys.readouterr().out)
    main([*args, "--transport", "tcp", "--timeout", "10"])
    tcp = json.loads(capsys.readouterr().out)
    assert tcp.pop("wire_bytes") > 0 and tcp == local


def test_party_command_reports_a_bad_peers_file(tmp_path, capsys):
    bad = tmp_path / "peers.json"
    bad.write_text('{"n": 0}')
    with pytest.raises(SystemExit) as info:
        main(["party", "--id", "0", "--peers", str(bad)])
    assert info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: {bad}: field 'n' must be int >= 1 (got 0)"]


async def test_privsim_party_runs_one_party_as_another_host_would(tmp_path):
    # `python -m privsim party --id 1 --peers FILE` in a fresh interpreter; party 0 runs here.
    proto, cfg, socks = config(n=2)
    socks[1].close()
    peers = cfg.write(tmp_path / "peers.json")
    assert oct(peers.stat().st_mode & 0o777) == "0o600"  # it holds the run's key
    reports = {}
    async with trio.open_nursery() as nursery:
        await start(nursery, cfg, socks, [0], reports)
        done = await trio.run_process([sys.executable, "-m", "privsim", "party", "--id", "1", "--peers", str(peers),
                                       "--result", str(tmp_path / "1.report")], capture_stdout=True, check=False)
    assert done.returncode == 0 and reports[0].error is None
    line = json.loads(done.stdout)
    local = await in_process(proto, np.array([1, 0]), trials=2, seed=5)
    assert (line["party"], line["messages"], line["error"]) == ("1", 1, None)
    other = PartyReport.from_bytes((tmp_path / "1.report").read_bytes())
    assert same_bits(other.output, local.outputs[1]) and same_bits(reports[0].output, local.outputs[0])


# ---------------------------------------------------------------------- start-up: the precomputed modulus
def secure_sum_peers(tmp_path, proto, n=5, t=2):
    cfg = PeersConfig.create(proto, np.arange(n) % 2, t=t, trials=2, seed=3,
                             addresses={p: ("127.0.0.1", 4000 + p) for p in range(n)})
    return cfg, cfg.write(tmp_path / "peers.json")


def test_a_peers_file_without_precomputed_values_derives_the_same_modulus(tmp_path):
    proto = get_protocol("secure-sum")
    cfg, _ = secure_sum_peers(tmp_path, proto)
    data = json.loads(cfg.to_json())
    del data["precomputed"]  # as a peers file written by hand (or before the field existed)
    old = PeersConfig.from_json(json.dumps(data))
    assert old.precomputed == {}
    q = old.build().modulus_for(5, 2)
    assert q == cfg.build().modulus_for(5, 2) == proto.modulus_for(5, 2) == 1 << 23


@pytest.mark.parametrize("params, value, text", [
    # the noiseless range: 2 n max_input 2^digits = 655360 encoded units
    ({}, {"modulus": 3 << 20}, "must be a power of two in (655360, 2^62] (got 3145728)"),
    ({}, {"modulus": 1 << 19}, "must be a power of two in (655360, 2^62] (got 524288)"),
    ({}, {"modulus": float(1 << 23)}, "must be a power of two in (655360, 2^62] (got 8388608.0)"),
    ({"modulus": 1 << 30}, {"modulus": 1 << 23}, "must be the modulus parameter, 1073741824 (got 8388608)"),
    ({}, {"modulus": 1 << 23, "sigma": 2}, "unknown value 'sigma' for secure-sum (allowed: modulus)"),
])
def test_a_peers_file_with_a_modulus_the_rule_cannot_give_is_refused(tmp_path, params, value, text):
    cfg, _ = secure_sum_peers(tmp_path, get_protocol("secure-sum", **params))
    data = {**json.loads(cfg.to_json()), "precomputed": value}
    with pytest.raises(ParameterError, match="^peers file: ") as info:
        PeersConfig.from_json(json.dumps(data)).build()
    assert str(info.value).endswith(text)


def test_precomputed_values_are_refused_by_a_protocol_that_takes_none():
    proto = get_protocol("randomized-response-distributed")
    assert proto.precomputed(3, 2) == {}
    with pytest.raises(ParameterError, match=r"takes no precomputed values \(got \['modulus'\]\)"):
        proto.adopt_precomputed(3, 2, {"modulus": 4})
    _, cfg, socks = config(n=2)
    for s in socks.values():
        s.close()
    assert cfg.precomputed == {} and '"precomputed": {}' in cfg.to_json()


def test_spawned_party_processes_run_secure_sum_as_in_process():
    proto = get_protocol("secure-sum")
    local = privsim.simulate(proto, None, n=4, t=1, trials=3, seed=9)
    tcp = privsim.simulate(proto, None, n=4, t=1, trials=3, seed=9, transport=TcpTransport(timeout=30, start="spawn"))
    assert_same_run(local, tcp)


# ---------------------------------------------------------------------- hostile peers (one process)
def config(n=3, timeout=2.0, trials=2, seed=5):
    proto = get_protocol("randomized-response-distributed")  # parties 1..n-1 connect to party 0
    socks = {p: socket.create_server(("127.0.0.1", 0)) for p in party_ids(n, False)}
    cfg = PeersConfig.create(proto, np.array([1, 0, 1][:n]), t=n - 1, trials=trials, seed=seed, timeout=timeout,
                             addresses={p: s.getsockname()[:2] for p, s in socks.items()})
    return proto, cfg, socks


async def in_process(proto, x, **kw):
    """The in-process run (its own trio.run, so in a thread of this async test)."""
    return await trio.to_thread.run_sync(lambda: privsim.simulate(proto, x, **kw))


async def start(nursery, cfg, socks, pids, reports):
    async def one(pid):
        reports[pid] = await run_party(cfg, pid, socks[pid])

    for pid in pids:
        nursery.start_soon(one, pid)


async def attempt(address, build):
    """Connect, read the listening party's preface, send ``build(nonce)``, half-close, read to the end."""
    stream = await trio.open_tcp_stream(*address)
    with trio.fail_after(5):
        got = b""
        while len(got) < 20:
            chunk = await stream.receive_some(20 - len(got))
            if not chunk:
                break
            got += chunk
        try:
            await stream.send_all(build(got[4:]))
            await stream.send_eof()
            while await stream.receive_some(4096):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
    await stream.aclose()


def fixed(data):
    return lambda _: data


def hello(key, listener_nonce, sender=1, receiver=0, mine=b"n" * 16):
    return MAGIC + mine + frame(key, listener_nonce + mine, HELLO, 0, sender, receiver, 0)


def refusals(caplog):
    return [r for r in caplog.records if r.name == "privsim.transport" and "refused a connection" in r.message]


async def test_fuzzed_listening_party_refuses_each_connection_with_one_line_and_runs_on(caplog):
    caplog.set_level(logging.WARNING, logger="privsim.transport")
    proto, cfg, socks = config()
    rng = np.random.default_rng(17)
    valid = hello(cfg.key, b"x" * 16)
    cases = [fixed(rng.bytes(int(rng.integers(0, 120)))) for _ in range(12)]  # random bytes
    cases += [fixed(valid[: int(rng.integers(0, len(valid)))]) for _ in range(12)]  # truncated
    head = HEADER.pack(MAGIC, HELLO, 0, 0, 1, 0, 0, 1 << 31)
    cases += [lambda _: MAGIC + b"n" * 16 + head,  # oversized
              lambda _: MAGIC + b"n" * 16 + b"XXXX" + head[4:],  # bad magic
              lambda nonce: hello(b"k" * 32, nonce),  # another run's key
              lambda nonce: hello(cfg.key, nonce, sender=9),  # no such party
              lambda nonce: hello(cfg.key, nonce, receiver=2),  # meant for another party
              lambda _: valid]  # a hello recorded on another connection (replayed)
    reports = {}
    async with trio.open_nursery() as nursery:
        await start(nursery, cfg, socks, [0], reports)
        for build in cases:
            await attempt(cfg.addresses[0], build)
        assert len(refusals(caplog)) == len(cases)  # one line each, and party 0 still listens
        await start(nursery, cfg, socks, [1, 2], reports)
    assert all(r.error is None for r in reports.values())
    local = await in_process(proto, np.array([1, 0, 1]), trials=2, seed=5)
    assert same_bits(reports[0].output, local.outputs[0])
    lines = [r.message for r in refusals(caplog)[-6:]]
    assert "exceeds the limit" in lines[0] and "bad magic" in lines[1] and "unknown peer" in lines[3]
    assert "bad HMAC" in lines[2] and "bad HMAC" in lines[5]  # another run's key; a replayed hello


async def test_unknown_peer_is_refused(caplog):
    caplog.set_level(logging.WARNING, logger="privsim.transport")
    _, cfg, socks = config(n=2)
    reports = {}
    async with trio.open_nursery() as nursery:
        await start(nursery, cfg, socks, [0], reports)
        with pytest.raises(PartyFailure, match="could not authenticate party 0"):
            await connect_peer(cfg.addresses[0], 1, 0, b"another run's key".ljust(32), cfg.max_payload,
                               trio.current_time() + 5)
        await start(nursery, cfg, socks, [1], reports)
    (line,) = refusals(caplog)
    assert "party 0: refused a connection from 127.0.0.1:" in line.message and "bad HMAC" in line.message
    assert reports[0].error is None and reports[1].error is None


@pytest.mark.parametrize("attack", ["out-of-round", "replayed"])
async def test_an_authenticated_peer_cannot_break_the_schedule(attack, caplog):
    # The test speaks for party 1 with the run's key; party 0 must fail cleanly, naming it.
    caplog.set_level(logging.WARNING, logger="privsim.transport")
    _, cfg, socks = config(n=2)
    socks[1].close()
    reports = {}
    async with trio.open_nursery() as nursery:
        await start(nursery, cfg, socks, [0], reports)
        link = await connect_peer(cfg.addresses[0], 1, 0, cfg.key, cfg.max_payload, trio.current_time() + 5)
        payload = encode_value(np.zeros(2, dtype=np.int64))
        if attack == "out-of-round":
            await link.send(MESSAGE, 2, payload)  # round 2 has no message from party 1 to party 0
        else:
            data = frame(cfg.key, link.session, MESSAGE, 1, 1, 0, 1, payload)
            await link.stream.send_all(data + data)
    error = reports[0].exception()
    if attack == "out-of-round":
        assert isinstance(error, ScheduleViolation)
        assert str(error) == "round 2: message off the schedule (round 2, sender 1, receiver 0)"
    else:
        assert isinstance(error, PartyFailure) and error.party == 1
        assert "refused a frame from party 1" in str(error) and "sequence number 1, expected 2" in str(error)
    assert len([r for r in caplog.records if "refused" in r.message]) == 1
    await link.close()


# ---------------------------------------------------------------------- the benchmark's guards
def test_benchmark_reports_mpyc_unavailable_instead_of_failing(monkeypatch):
    bench = load_bench("transport")
    real = bench.importlib.util.find_spec
    monkeypatch.setattr(bench.importlib.util, "find_spec", lambda name: None if name == "mpyc" else real(name))
    assert bench.mpyc_secure_sum(4) == {"available": False, "reason": "mpyc is not installed (pip install mpyc)"}
    row = bench.privsim_secure_sum(4)
    schedule = get_protocol("secure-sum").schedule(4, 1)
    assert (row["rounds"], row["messages"]) == (schedule.rounds, schedule.messages)
    assert row["wire_bytes"] > row["bits"] / 8


# ---------------------------------------------------------------------- framing
DTYPES = ["?", "i1", "i8", "u2", "u8", "f4", "f8", "c16"]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(DTYPES), st.lists(st.integers(0, 4), max_size=3), st.integers(0, 2**32 - 1))
def test_values_survive_the_wire_bit_for_bit(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    value = arr.view(dtype).reshape(shape) if dtype != "?" else (arr % 2).astype(bool).reshape(shape)
    back = decode_value(encode_value((value, value[()] if value.ndim == 0 else 3, [2.5, None])))
    assert same_bits(back[0], value) and not back[0].flags.writeable
    assert back[1:] == (value[()] if value.ndim == 0 else 3, [2.5, None])


def test_an_empty_array_beyond_numpys_index_range_is_a_frame_error():
    # shape (0, 2^60): zero elements, yet np.empty refuses it (hypothesis found it)
    good = encode_value(np.zeros((0, 2), dtype=np.int64))
    big = good.replace((2).to_bytes(8, "big"), (1 << 60).to_bytes(8, "big"), 1)
    assert big != good and decode_value(good).shape == (0, 2)
    with pytest.raises(FrameError, match="beyond numpy's index range"):
        decode_value(big)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_hostile_payloads_raise_only_frame_errors(data):
    for blob in (data, encode_value(np.arange(6).reshape(2, 3))[: len(data)] + data):
        try:
            decode_value(blob)
        except FrameError:
            pass
        try:
            parse_header(blob[: HEADER.size])
        except FrameError:
            pass
