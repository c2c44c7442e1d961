"""``python -m privsim`` runs the CLI."""

from privsim.cli import main

if __name__ == "__main__":
    main()
