"""Bias-based coherence of Type 2 device memory: the bias table, device accesses, flips."""

from cxlsim.coherence.biased import BiasedMemory
from cxlsim.coherence.table import PAGE_BYTES, Bias, BiasTable

__all__ = ["PAGE_BYTES", "Bias", "BiasTable", "BiasedMemory"]
