import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def pytest_collection_finish(session):
    # The docs site's strict build runs beside the tests that come before it (see _site_build.py).
    if any(item.nodeid.split("::")[0].endswith("test_docs_site.py") for item in session.items):
        import _site_build

        _site_build.start()
