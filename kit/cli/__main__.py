"""``python -m kit.cli``: the ``coldstart`` command."""

import sys

from . import main

sys.exit(main())
