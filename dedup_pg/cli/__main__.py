"""``python -m dedup_pg.cli``: the ``dedup-pg`` command."""

from . import main

main()
