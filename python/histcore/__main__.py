"""``python -m histcore``: the same command line as the ``histcore`` script."""

from histcore.cli.main import main

raise SystemExit(main())
