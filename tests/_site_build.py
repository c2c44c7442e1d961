"""The docs site's strict build, started in the background as soon as the suite is
collected (tests/conftest.py) and awaited by tests/test_docs_site.py.

The build costs about 15 s of CPU (mkdocstrings renders every public module) and the
suite runs in one process on two cores: started early, it runs beside the tests before
test_docs_site.py instead of adding its time to theirs. (Not niced: on a loaded machine a
niced build starves and the suite waits for it.)
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_build: dict[str, object] = {}


def start() -> None:
    """Start ``mkdocs build --strict`` into a temporary folder (once)."""
    if _build:
        return
    out = Path(tempfile.mkdtemp(prefix="privsim-site-"))
    atexit.register(shutil.rmtree, out, True)
    log = open(out.parent / f"{out.name}.log", "w+")  # noqa: SIM115 - read back in wait()
    atexit.register(os.unlink, log.name)
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out / "site")]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    atexit.register(lambda: proc.poll() is None and proc.kill())
    _build.update(proc=proc, log=log, site=out / "site")


def wait(timeout: float = 600) -> tuple[int, str, Path]:
    """The build's exit code, its output and the built site's folder."""
    start()
    proc, log = _build["proc"], _build["log"]
    code = proc.wait(timeout)  # type: ignore[attr-defined]
    log.seek(0)  # type: ignore[attr-defined]
    return code, log.read(), _build["site"]  # type: ignore[return-value]
