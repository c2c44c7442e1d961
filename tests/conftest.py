import os
import sys
from pathlib import Path

from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

# Property tests draw the same examples on every run (a landing is judged by one run: a
# new example found by chance must not block it); HYPOTHESIS_PROFILE=explore draws fresh
# ones, for a developer looking for counterexamples (then add what it finds as a test).
settings.register_profile("fixed", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))


def pytest_collection_finish(session):
    # The docs site's strict build runs beside the tests that come before it (see _site_build.py).
    if any(item.nodeid.split("::")[0].endswith("test_docs_site.py") for item in session.items):
        import _site_build

        _site_build.start()
