"""``python -m cxlsim``: the ``cxlsim`` command."""

from cxlsim.cli import main

raise SystemExit(main())
