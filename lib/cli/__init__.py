"""``python -m lib.cli``: the command line. The only place in ``lib`` that parses arguments or prints."""
from lib.cli.main import main

__all__ = ["main"]
