"""``python -m memento_core``: the same as the ``memento-core`` command."""

import sys

from memento_core.cli import main

sys.exit(main())
