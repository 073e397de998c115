"""``python -m memento_mcp``: the same as the ``memento-mcp-server`` command."""

from memento_mcp.cli import main

main()
