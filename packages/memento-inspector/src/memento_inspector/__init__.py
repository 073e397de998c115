"""Memento Inspector: see, search, correct and erase what an agent remembers, in a browser."""

from memento_inspector.app import create_app
from memento_inspector.rendering import VERSION as __version__
from memento_inspector.viewer import Inspector

__all__ = ["Inspector", "__version__", "create_app"]
