"""The docs pages (docs/**/*.md, the site's source) teach what runs: their Python blocks run
as written, their commands run and write every figure they show, and the numbers they
quote are the ones privsim computes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_scenarios import AUDIT_TRIALS, check_output

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """Every page of the site's source, in a fixed order."""
    return sorted(DOCS.rglob("*.md"))


def python_blocks(page: Path | None = None) -> list[str]:
    return [block for p in ([page] if page else pages())
            for block in re.findall(r"```python\n(.*?)```", p.read_text(), flags=re.S)]


def at_reduced_size(code: str) -> str:
    """``code`` with every ``trials=`` above 4096 cut to 4096, as the commands below are: this
    test checks that every call runs as written; the numbers a block prints are not compared
    (the ones the text quotes are checked at the end of this file)."""
    return re.sub(r"\btrials=([\d_]+)", lambda m: f"trials={min(int(m.group(1)), 4096)}", code)


def test_docs_python_blocks_run():
    blocks = [(page, code) for page in pages() for code in python_blocks(page)]
    assert len(blocks) >= 6
    assert at_reduced_size("audit(p, trials=100_000, seed=2)") == "audit(p, trials=4096, seed=2)"
    for page, code in blocks:
        exec(compile(at_reduced_size(code), str(page), "exec"), {"__name__": "docs"})


def test_docs_protocol_example_is_short():
    example = next(b for b in python_blocks(DOCS / "protocols" / "writing.md") if "class LocalLaplace" in b)
    body = example.split("res = privsim.simulate")[0].strip().splitlines()
    assert len(body) < 40


def test_getting_started_opens_with_the_two_commands():
    text = (DOCS / "getting-started.md").read_text()
    first = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1)
    assert "pip install -e '.[dev]' && privsim run scenarios/randomized_response.toml" in first
    assert "pytest" in first


def docs_commands():
    """Every ``$ privsim ...`` line of the pages' console blocks, split into words."""
    blocks = [b for p in pages() for b in re.findall(r"```console\n(.*?)```", p.read_text(), flags=re.S)]
    return [line[2:].split() for block in blocks for line in block.splitlines() if line.startswith("$ privsim ")]


def promised_figures() -> set[str]:
    """The figures the pages show, as paths from the repository's root (``docs/x.png``)."""
    found = set()
    for page in pages():
        for link in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", page.read_text()):
            found.add((page.parent / link).resolve().relative_to(ROOT).as_posix())
    return found


def _small_headline(path: Path, tmp_path: Path) -> Path:
    """A copy of the headline scenario over its two smallest n (the figure's code path is
    the same; the full study costs most of a minute, three n 11 s, two 4 s)."""
    text = (ROOT / path).read_text()
    ns = re.search(r"^ns = \[(.*?)\]", text, flags=re.M)
    small = tmp_path / "headline.toml"
    small.write_text(text.replace(ns.group(0), "ns = [" + ",".join(ns.group(1).split(",")[:2]) + "]"))
    return small


def test_docs_commands_run_and_write_every_figure(tmp_path, capsys):
    """Follow the tutorials at reduced size: every command runs and every promised figure appears."""
    from privsim.cli import main

    promised = promised_figures()
    assert len(promised) >= 6
    written = set()
    commands = docs_commands()
    assert len(commands) >= 8
    for argv in commands:
        args = argv[1:]
        if "--plot" in args:
            k = args.index("--plot")
            written.add(args[k + 1])
            args[k + 1] = str(tmp_path / Path(args[k + 1]).name)
        if any(a.endswith("headline.toml") for a in args):  # the same study over its first two n only
            k = next(i for i, a in enumerate(args) if a.endswith("headline.toml"))
            args[k] = str(_small_headline(Path(args[k]), tmp_path))
        audits = args[0] in ("audit", "bounds")
        small = "50" if "headline" in " ".join(args) else (str(AUDIT_TRIALS) if audits else "40")
        if "--trials" in args:
            args[args.index("--trials") + 1] = small
        elif args[0] != "views":
            args += ["--trials", small]
        main([*args, "--json"] if args[0] != "views" else args)
        out = capsys.readouterr().out
        if args[1].startswith("scenarios/") and args[0] in ("run", "audit"):  # test_scenarios.py leaves these here
            check_output(args[0], ROOT / args[1], json.loads(out), int(small))
    # the commands write to the folder they run from (never over the docs' own figures)
    assert not {w for w in written if w.startswith("docs/")}, "a tutorial command rewrites a tracked figure"
    names = {Path(w).name for w in written}
    assert {Path(p).name for p in promised} <= names, f"figures the docs show but no command writes: {promised}"
    for name in promised:
        assert (tmp_path / Path(name).name).stat().st_size > 1000


# ---------------------------------------------------------------------------------------
# The numbers the tutorials quote, checked within the precision it quotes them to (the
# runs below are the quick ones; the 10^6-trial audits and the 2000-trial secure sum are not).


def quoted(pattern: str) -> list[str]:
    """The numbers ``pattern`` (a regex with groups) captures in the docs pages; it must match."""
    match = re.search(pattern, " ".join(" ".join(p.read_text().split()) for p in pages()))
    assert match, f"the docs no longer say: {pattern}"
    return list(match.groups())


def agrees(value: float, text: str) -> bool:
    """``value`` printed to the decimals of ``text`` is ``text`` (half a unit either way)."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return abs(value - float(text)) <= 0.5 * 10**-decimals + 1e-12


def cli_json(capsys, *args):
    from privsim.cli import main

    main([*map(str, args), "--json"])
    return json.loads(capsys.readouterr().out)


def test_section_1_numbers(capsys):
    from privsim.protocols import RandomizedResponse

    msgs, rounds, bits, std, theory = quoted(r"reports messages = (\d+), rounds = (\d+), bits = (\d+), and "
                                             r"estimate_std = ([\d.]+) against the paper's [^=]+= ([\d.]+)")
    d = cli_json(capsys, "run", ROOT / "scenarios" / "randomized_response.toml")
    assert (d["messages"], d["rounds"], d["bits"]) == (int(msgs), int(rounds), int(bits))
    assert agrees(d["estimate_std"], std)
    assert agrees(RandomizedResponse(epsilon=1.0).variance(1000) ** 0.5, theory)


def test_section_2_numbers():
    from privsim.protocols import get_protocol

    msgs, theory = quoted(r"messages = \(t\+1\)\(n-1\) \+ t = (\d+), and estimate_std = [\d.]+ against the exact "
                          r"sqrt\(2 b\^2 n/\(n-t\)\) = ([\d.]+)")
    proto = get_protocol("secure-sum", noise="laplace", epsilon=1.0)
    assert proto.cached_schedule(1000, 10).messages == int(msgs)
    assert agrees(proto.noise_variance(1000, 10) ** 0.5, theory)


def test_section_6_number(capsys):
    # A lower bound is quoted rounded down: the quoted digits are the bound's, truncated.
    from privsim.analysis.plots import floor_text

    (bound,) = quoted(r"here party 0 against party 1: epsilon >= ([\d.]+)")
    d = cli_json(capsys, "bounds", "--protocol", "randomized-response-distributed", "--n", 8, "--t", 2, "--audit",
                 "--trials", 100000)
    assert (d["audit"]["coalition"], d["audit"]["neighbor"]) == (["0"], 1)
    assert floor_text(d["audit"]["epsilon_lower"], len(bound.split(".")[1])) == bound


def test_section_7_number():
    from privsim.protocols import get_protocol

    (theory,) = quoted(r"over 2000 trials against sqrt\(\(h\+1\)\(h\+2\)/\(8 rho\)\) = ([\d.]+)")
    proto = get_protocol("continual-sum", T=1024, rho=0.5)
    assert agrees(proto.variance ** 0.5, theory)
