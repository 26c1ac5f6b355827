"""Notebooks run by pytest (nbmake) run in QUICK mode unless QUICK is set otherwise."""

import os

os.environ.setdefault("QUICK", "1")
