"""The pluggy markers of Memento's hooks (``plugins`` re-exports them for plugin authors).

They live apart so that core's own plugins (``_default_plugins``) can mark their hooks without
importing the plugin host that loads them.
"""

import pluggy

PROJECT = "memento"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
