"""`python3 -m irontune_record APP --out FILE`: see irontune_record.cli."""

import sys

from .cli import main

sys.exit(main())
