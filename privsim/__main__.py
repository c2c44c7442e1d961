"""``python -m privsim`` runs the CLI."""

from privsim.cli import main

main()
