"""Run the nlgrad CLI from a checkout: ``python cli.py eval --benchmark twx/coin``.

The commands live in :mod:`nlgrad.cli` (installed with the package as the ``nlgrad`` console script), so that
``pip install .`` never creates a generic top-level ``cli`` module.
"""

from nlgrad.cli import main

if __name__ == "__main__":
    main()
