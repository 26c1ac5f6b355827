"""The checks behind ``cxlsim validate``, one function per reproduced study.

Each runs the simulator's component models (never a stored answer) and compares with
the published value. A check lands with the issue that builds its models.
"""
