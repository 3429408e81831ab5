"""`python -m flamewatch.cli`: the `flamewatch` command, as `flamewatch all` starts its compactor process
(the interpreter that runs `all`, whatever installed it)."""

import sys

from flamewatch.cli import main

sys.exit(main())
