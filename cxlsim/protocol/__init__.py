"""Transactions over the links: CXL.mem and CXL.cache message sequences, bulk moves,
credits, and the journey of a transaction through its stages."""

from cxlsim.protocol.bulk import Bulk
from cxlsim.protocol.cache import CachePath
from cxlsim.protocol.credits import CreditPool
from cxlsim.protocol.journey import Route, Transaction
from cxlsim.protocol.mem import MemPath

__all__ = ["Bulk", "CachePath", "CreditPool", "MemPath", "Route", "Transaction"]
