"""``python -m sluice.cli``: the ``sluice`` command (how ``sluice up`` starts its children)."""

from sluice.cli import main

if __name__ == "__main__":
    main()
