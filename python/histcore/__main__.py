"""``python -m histcore``: the same command line as the ``histcore`` script."""

from histcore.cli import main

raise SystemExit(main())
