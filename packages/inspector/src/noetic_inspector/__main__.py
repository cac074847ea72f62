"""`python -m noetic_inspector STORE ...`: the `noetic inspect` command."""

import sys

from noetic_inspector.command import main

sys.exit(main())
