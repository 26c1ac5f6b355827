"""``python -m cxlsim``: the ``cxlsim`` command."""

from cxlsim.cli import console

console()
