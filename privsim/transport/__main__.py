"""``python -m privsim.transport --id I --peers FILE``: one party process (as ``privsim party``).

The launcher starts parties this way with ``TcpTransport(start="spawn")``; it imports less
than the command line does (no typer, no rich).
"""

import sys

from privsim.transport.party import main

if __name__ == "__main__":
    sys.exit(main())
