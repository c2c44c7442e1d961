"""The bundled notebook (examples/workbench.ipynb) runs headless, and every result in it
displays itself: an HTML table with its figure, and a plain text of at most 100 columns."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def outputs_of(cell) -> tuple[str, str, str]:
    """(the HTML, the plain text, the printed text) a cell left."""
    html = "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)
    plain = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
    printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    return html, plain, printed


def test_workbench_notebook_runs_and_its_results_display_themselves(tmp_path):
    nb = nbformat.read(ROOT / "examples" / "workbench.ipynb", as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    run, printed_run, view, audit, printed_audit, claim = (outputs_of(c) for c in code)

    html, plain, _ = run
    assert "SimulationResult: randomized-response" in html and "<table" in html and "data:image/png;base64," in html
    assert plain.startswith("SimulationResult(randomized-response, n=100, t=") and "trials=500" in plain
    assert "messages 100, bits 100, rounds 1" in printed_run[2]
    html, plain, _ = view
    assert "messages" in html and "<td>1</td>" in html  # the first round's messages, in a table
    assert plain.startswith("View(coalition {0,1}, trials=50)")
    html, plain, _ = audit
    assert "AuditResult: not violated" in html and "data:image/png;base64," in html
    assert "msg r1 1-&gt;C" in html  # the event the audit chose
    assert plain.startswith("AuditResult(randomized-response, {C} vs party 1, trials=4096, seed=3): not violated")
    assert "epsilon_lower" in printed_audit[2]
    html, plain, _ = claim
    assert "Privacy:" in html and "data:image/png;base64," in html and plain.startswith("Privacy(")
    for _, plain, printed in (run, printed_run, view, audit, printed_audit, claim):
        assert all(len(line) <= 100 for line in (plain + printed).splitlines())
