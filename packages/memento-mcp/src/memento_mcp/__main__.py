"""``python -m memento_mcp``: the same as the ``memento-mcp`` command."""

from memento_mcp.cli import main

main()
