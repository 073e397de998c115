"""Memento Inspector: see, search, correct and erase what an agent remembers, in a browser."""

from memento_inspector.app import Inspector, create_app

__version__ = "0.1.0"

__all__ = ["Inspector", "__version__", "create_app"]
