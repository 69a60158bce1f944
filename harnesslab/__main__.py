"""``python -m harnesslab``: the ``harnesslab`` command."""

import sys

from harnesslab.cli.app import main

sys.exit(main())
