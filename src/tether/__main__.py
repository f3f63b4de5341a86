"""`python -m tether` runs the same entry point as the `tether` command."""

from tether.cli import main

raise SystemExit(main())
