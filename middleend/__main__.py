"""``python -m middleend``: the ``middleend`` command."""

import sys

from .api.cli import main

sys.exit(main())
