"""Users' protocols: loaded from a file, a module or a plugin, on every command and executor."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

import privsim
from privsim.analysis.audit import audit
from privsim.analysis.bounds import analyze_schedule
from privsim.cli import main
from privsim.protocols import loading, resolve_protocol
from privsim.scenario import make_inputs
from privsim.simulate import run_trials

ROOT = Path(__file__).resolve().parent.parent
RELAY = ROOT / "examples" / "relay_sum.py"
PLUGIN = ROOT / "examples" / "plugin"
RELAY_ARGS = ["--n", "5", "--seed", "3", "--param", "epsilon=0.7"]
AUDIT_ARGS = ["--coalition", "1,3", "--neighbor", "2", "--trials", "8192"]

# Runs CLI commands in this fresh interpreter and prints each one's JSON on a line.
DRIVER = """
import contextlib, io, json, sys
from privsim.cli import main
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(argv)
        except SystemExit as exc:
            assert not exc.code, (argv, exc.code)
    print(json.dumps(json.loads(out.getvalue())))
"""


def fresh_process(commands: list[list[str]], cwd: Path, pythonpath: list[Path] = ()) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))}
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(commands)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main([*args])
        raise SystemExit(0)
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


def one_line_error(capsys, *args: str) -> str:
    code, _, err = cli(capsys, *args)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    return err


# ------------------------------------------------------------------ end to end, in a fresh process
RELAY_REF = "relay_sum.py:RelaySum"
RELAY_RUN = ["run", "--protocol", RELAY_REF, *RELAY_ARGS, "--trials", "3000", "--json"]
PLUGIN_RUN = ["run", "--protocol", "geometric-sum", "--n", "10", "--trials", "4000", "--seed", "1", "--json"]


def _fake_install(site: Path, entry_points: dict[str, str], dist: str = "privsim-geometric") -> None:
    # What `pip install` leaves for importlib.metadata: a dist-info folder with the
    # entry points (the package itself is on PYTHONPATH, as an editable install puts it).
    info = site / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{loading.ENTRY_POINT_GROUP}]\n{lines}")


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> tuple[Path, list[dict]]:
    """The commands of both end-to-end tests, in one fresh interpreter (its start and imports
    cost seconds): the example file written into the working directory, the example plugin
    installed as metadata. Returns the folder and each command's JSON, in order."""
    folder = tmp_path_factory.mktemp("fresh")
    (folder / "relay_sum.py").write_text(RELAY.read_text())
    declared = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]["entry-points"]
    _fake_install(folder / "site", declared[loading.ENTRY_POINT_GROUP])
    return folder, fresh_process([
        RELAY_RUN, [*RELAY_RUN, "--executor", "processes", "--workers", "1"],
        ["views", "--protocol", RELAY_REF, *RELAY_ARGS, "--coalition", "2,C", "--trials", "2", "--json"],
        ["audit", "--protocol", RELAY_REF, *RELAY_ARGS, *AUDIT_ARGS, "--json"],
        ["bounds", "--protocol", RELAY_REF, *RELAY_ARGS, "--t", "2", "--json"],
        ["protocols", "--json"], PLUGIN_RUN, [*PLUGIN_RUN, "--executor", "processes", "--workers", "1"],
    ], cwd=folder, pythonpath=[folder / "site", PLUGIN / "src"])


def test_file_protocol_end_to_end_matches_the_python_api(fresh):
    """Write the file, then run, views, audit and bounds through --protocol FILE.py:Class in a
    fresh interpreter (local and processes executors): the numbers are the Python API's."""
    folder, (got_run, got_proc, got_views, got_audit, got_bounds) = fresh[0], fresh[1][:5]
    proto = loading.load_reference(str(folder / RELAY_REF))(epsilon=0.7)
    x = make_inputs(proto, None, 5, 3)
    want_run = run_trials(proto, x, trials=3000, seed=3).summary()
    assert got_run == want_run
    assert {**got_proc, "executor": "local"} == want_run and got_proc["executor"] == "processes"
    assert got_run["messages"] == 5 and got_run["rounds"] == 5
    # Var = n * 2 b^2 with b = 1/eps: a factor of two in the noise would be 14 sigma away.
    var = 5 * 2 / 0.7**2
    sd_var = var * np.sqrt((2 + 3 / 5) / 3000)  # the sample variance's spread (Laplace excess kurtosis 3)
    assert abs(got_run["estimate_std"] ** 2 - var) < 5 * sd_var

    assert got_views == privsim.simulate(proto, x, trials=2, seed=3, coalition="2,C").view("2,C").to_dict(trials=2)
    want_audit = audit(proto, x, coalition="1,3", neighbor=2, trials=8192, seed=3).to_dict()
    assert {k: got_audit[k] for k in ("epsilon_lower", "epsilon_point", "p_hat", "q_hat", "event")} == \
        {k: want_audit[k] for k in ("epsilon_lower", "epsilon_point", "p_hat", "q_hat", "event")}
    assert got_audit["epsilon_claimed"] == pytest.approx(0.7) and got_audit["violated"] is False
    assert got_bounds["messages"] == 5 and got_bounds == {
        "protocol": "relay-sum", "params": {"epsilon": 0.7},
        **analyze_schedule(proto.cached_schedule(5, 2), 2).to_dict()}


def test_example_plugin_is_listed_and_runs_by_name(fresh):
    """The example plugin's own entry points, installed as metadata in a fresh process: listed
    with its parameters, run by name (on processes: the class travels by import path)."""
    listed, got, got_proc = fresh[1][5:]
    assert listed["geometric-sum"]["epsilon"]["allowed"] == "float > 0"
    assert "secure-sum" in listed  # the built-ins are still there
    assert got["protocol"] == "geometric-sum" and got["messages"] == 10
    assert {**got_proc, "executor": "local"} == got
    # Var = n 2a/(1-a)^2, a = e^-eps (two-sided geometric); the sample variance's spread
    # from the excess kurtosis (p^2 + 6q)/(2q) of one share (q = a, p = 1 - a), over n.
    a = np.exp(-1.0)
    var, kurt = 10 * 2 * a / (1 - a) ** 2, ((1 - a) ** 2 + 6 * a) / (2 * a) / 10
    assert abs(got["estimate_std"] ** 2 - var) < 5 * var * np.sqrt((2 + kurt) / 4000)


# ------------------------------------------------------------------ executors
@pytest.fixture
def plugin_class(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGIN / "src"))
    from privsim_geometric import GeometricSum

    return GeometricSum


def test_how_user_protocols_travel_to_workers(tmp_path, plugin_class):
    """A file's class travels by value (its file may be gone); a module's by import path."""
    from privsim.executors import ProcessExecutor

    path = tmp_path / "relay_sum.py"
    path.write_text(RELAY.read_text())
    relay = loading.load_reference(f"{path}:RelaySum")
    assert len(cloudpickle.dumps(relay)) > 1000  # the class itself
    assert cloudpickle.dumps(plugin_class) == pickle.dumps(plugin_class, protocol=cloudpickle.DEFAULT_PROTOCOL)
    path.unlink()  # workers cannot read the file: they never need to
    with ProcessExecutor(workers=2) as ex:
        for cls in (relay, plugin_class):
            kw = {"trials": 2500, "seed": 4, "batch_trials": 1024}
            local = run_trials(cls(), [0, 1, 1, 0], **kw).summary()
            remote = run_trials(cls(), [0, 1, 1, 0], executor=ex, **kw).summary()
            assert {**remote, "executor": "local"} == local and remote["batches"] == 3


def test_user_protocols_on_dask(tmp_path, plugin_class):
    from privsim.executors import DaskExecutor

    path = tmp_path / "relay_sum.py"
    path.write_text(RELAY.read_text())
    relay = loading.load_reference(f"{path}:RelaySum")
    path.unlink()
    with DaskExecutor(workers=1) as ex:
        for cls in (relay, plugin_class):  # by value, then by import path
            kw = {"trials": 2100, "seed": 5, "batch_trials": 1024}
            local = run_trials(cls(), [1, 0, 1], **kw).summary()
            assert {**run_trials(cls(), [1, 0, 1], executor=ex, **kw).summary(), "executor": "local"} == local


def test_module_references_are_imported_from_the_path_or_the_working_directory(tmp_path, monkeypatch, capsys,
                                                                            plugin_class):
    code, out, _ = cli(capsys, "run", "--protocol", "privsim_geometric:GeometricSum", "--n", "4", "--trials", "50",
                       "--json")
    assert code == 0 and json.loads(out)["protocol"] == "geometric-sum"
    (tmp_path / "my_relay.py").write_text(RELAY.read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "my_relay", raising=False)
    assert resolve_protocol("my_relay:RelaySum").name == "relay-sum"  # found in the working directory


# ------------------------------------------------------------------ scenario files, the template
def test_scenario_protocol_path_is_relative_to_the_scenario(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # far from examples/, where the scenario and its protocol are
    scenario = str(ROOT / "examples" / "relay_sum.toml")
    code, out, _ = cli(capsys, "run", scenario, "--trials", "100", "--json")
    assert code == 0 and json.loads(out)["protocol"] == "relay-sum" and json.loads(out)["messages"] == 8
    code, out, _ = cli(capsys, "audit", scenario, "--trials", "4096", "--json")
    assert code == 0 and json.loads(out)["coalition"] == ["2", "4"] and json.loads(out)["neighbor"] == 3
    (tmp_path / "mine.toml").write_text('protocol = "sub/relay.py:RelaySum"\nn = 3\n')
    assert "file " + str(tmp_path / "sub" / "relay.py") + " does not exist" in one_line_error(
        capsys, "run", "mine.toml")


def test_docs_section_shows_the_example_file_in_under_40_lines():
    text = (ROOT / "docs" / "protocols" / "writing.md").read_text()
    section = text.split("## Your own protocol, end to end")[1].split("\n## ")[0]
    block = section.split("```python\n")[1].split("```")[0]
    assert block == RELAY.read_text() and len(block.splitlines()) < 40
    assert "end_round()` once per round, also in rounds where it sends nothing" in section
    assert "`true_value` defaults to the sum of the parties' inputs" in section


def test_new_protocol_writes_a_runnable_file_and_scenario(tmp_path, monkeypatch, capsys):
    code, out, _ = cli(capsys, "new-protocol", "coin-sum", "--dir", str(tmp_path / "mine"))
    assert code == 0 and "coin_sum.toml" in out
    text = (tmp_path / "mine" / "coin_sum.py").read_text()
    assert "class CoinSum(Protocol):" in text and "end_round() once per round" in text and "true_value" in text
    scenario = str(tmp_path / "mine" / "coin_sum.toml")
    code, out, _ = cli(capsys, "run", scenario, "--trials", "500", "--json")
    summary = json.loads(out)
    assert code == 0 and summary["protocol"] == "coin-sum" and summary["messages"] == 20
    # n = 20 parties with Lap(1/eps) each: Var = 40 (Laplace excess kurtosis 3, over n).
    assert abs(summary["estimate_std"] ** 2 - 40) < 5 * 40 * np.sqrt((2 + 3 / 20) / 500)
    code, out, _ = cli(capsys, "audit", scenario, "--trials", "8192", "--json")
    assert code == 0 and json.loads(out)["violated"] is False
    err = one_line_error(capsys, "new-protocol", "coin-sum", "--dir", str(tmp_path / "mine"))
    assert "coin_sum.py exists" in err
    assert "NAME must be lowercase" in one_line_error(capsys, "new-protocol", "Bad Name")
    assert "built-in" in one_line_error(capsys, "new-protocol", "secure-sum", "--dir", str(tmp_path))


# ------------------------------------------------------------------ loading errors: one line, exit 2
@pytest.mark.parametrize("source, expect", [
    ("def broken(:\n", "relay.py failed to import: SyntaxError: invalid syntax (line 1)"),
    ("import numpy\nraise RuntimeError('no GPU here')\n", "failed to import: RuntimeError: no GPU here (line 2)"),
    ("from privsim import Protocol\nclass Other(Protocol):\n    name = 'other'\n",
     "has no class 'RelaySum' (Protocol classes there: Other)"),
    ("RelaySum = 3\n", "RelaySum is a int, not a subclass of privsim.Protocol"),
    ("class RelaySum:\n    pass\n", "RelaySum is class RelaySum, not a subclass of privsim.Protocol"),
    ("from privsim.protocols.secure_sum import SecureSum\nclass RelaySum(SecureSum):\n    pass\n",
     "the name 'secure-sum' is a built-in protocol's"),
])
def test_file_errors_are_one_line(tmp_path, capsys, source, expect):
    (tmp_path / "relay.py").write_text(source)
    err = one_line_error(capsys, "run", "--protocol", f"{tmp_path / 'relay.py'}:RelaySum", "--n", "3")
    assert expect in err


def test_reference_errors_are_one_line(capsys, tmp_path):
    assert "does not exist" in one_line_error(capsys, "views", "--protocol", "nope.py:X", "--n", "3",
                                              "--coalition", "C")
    assert "no module named 'no_such_pkg'" in one_line_error(capsys, "bounds", "--protocol", "no_such_pkg.mod:X",
                                                             "--n", "3")
    assert "expected FILE.py:ClassName" in one_line_error(capsys, "run", "--protocol", "relay.py:", "--n", "3")
    assert "unknown protocol 'relay-sum'" in one_line_error(capsys, "run", "--protocol", "relay-sum", "--n", "3")


def test_plugin_name_clash_and_broken_plugin_are_reported(monkeypatch, capsys, plugin_class):
    eps = [EntryPoint("secure-sum", "privsim_geometric:GeometricSum", loading.ENTRY_POINT_GROUP),
           EntryPoint("geometric-sum", "privsim_geometric:GeometricSum", loading.ENTRY_POINT_GROUP),
           EntryPoint("broken", "privsim_geometric:Missing", loading.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(loading, "_entry_points", lambda: iter(eps))
    code, out, err = cli(capsys, "protocols", "--json")
    lines = err.splitlines()
    assert code == 2 and len(lines) == 2 and "geometric-sum" in json.loads(out)
    assert "the name 'secure-sum' is a built-in protocol's" in lines[1 - lines[1].count("broken")]
    assert "has no class 'Missing'" in next(line for line in lines if "broken" in line)
    assert resolve_protocol("geometric-sum") is plugin_class
    assert resolve_protocol("secure-sum").__module__ == "privsim.protocols.secure_sum"  # the built-in wins
