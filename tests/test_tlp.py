"""TLP wire accounting: config checks, header sizes, DLLP/SKP bandwidth, packetizers."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cxlsim.link.tlp import (
    PcieConfig, completion_size, completion_wire_bytes, dma_wire_bytes, raw_bandwidth,
    read_request_wire_bytes, split, tlp_bandwidth, write_wire_bytes,
)

configs = st.builds(
    PcieConfig,
    generation=st.sampled_from([1, 2, 3, 4, 5]), width=st.sampled_from([1, 2, 4, 8, 16]),
    mps=st.sampled_from([128, 256, 512, 1024, 2048, 4096]),
    mrrs=st.sampled_from([128, 256, 512, 1024, 2048, 4096]),
    rcb=st.sampled_from([64, 128]), addr64=st.booleans(), ecrc=st.booleans())


@pytest.mark.parametrize("field, value, message", [
    ("generation", 6, "generation must be 1-5 (PCIe 6.0 is flit mode, not modelled here), not 6"),
    ("generation", 3.0, "generation must be 1-5"),
    ("width", 32, "width must be 1, 2, 4, 8 or 16 lanes, not 32"),
    ("mps", 192, "mps must be a power of two from 128 to 4096 bytes, not 192"),
    ("mps", 64, "mps must be a power of two"),
    ("mrrs", 8192, "mrrs must be a power of two from 128 to 4096 bytes, not 8192"),
    ("rcb", 256, "rcb must be 64 or 128 bytes, not 256"),
    ("addr64", 1, "addr64 must be True or False, not 1"),
    ("ecrc", "no", "ecrc must be True or False"),
])
def test_config_rejects(field, value, message):
    with pytest.raises(ValueError, match=re.escape("PcieConfig: " + message)):
        PcieConfig(**{field: value})


@pytest.mark.parametrize("addr64, ecrc, mwr, mrd, cpld", [
    (True, False, 24, 24, 20), (False, False, 20, 20, 20),
    (True, True, 28, 28, 24), (False, True, 24, 24, 24),
])
def test_tlp_overheads(addr64, ecrc, mwr, mrd, cpld):
    cfg = PcieConfig(addr64=addr64, ecrc=ecrc)
    assert (cfg.mwr_overhead, cfg.mrd_overhead, cfg.cpld_overhead) == (mwr, mrd, cpld)


def test_gen3_x16_bandwidths():
    """SIGCOMM'18 model: raw 126.03 Gb/s, 8/168 + 8/168 + 4/1538 overhead -> 113.70 Gb/s."""
    cfg = PcieConfig()
    assert raw_bandwidth(cfg) * 8 / 1e9 == pytest.approx(126.03, abs=0.005)
    assert tlp_bandwidth(cfg) == pytest.approx(raw_bandwidth(cfg) * (1 - 16 / 168 - 4 / 1538))
    assert tlp_bandwidth(cfg) * 8 / 1e9 == pytest.approx(113.70, abs=0.005)
    assert raw_bandwidth(PcieConfig(generation=1, width=1)) == 2.5e9 * 0.8 / 8


def test_narrow_links_use_x8_limits():
    for width in (1, 2, 4):
        cfg = PcieConfig(width=width)
        assert tlp_bandwidth(cfg) / raw_bandwidth(cfg) == pytest.approx(
            1 - 16 / 203 - 4 / 1538)


def test_wire_bytes_64():
    cfg = PcieConfig()
    assert dma_wire_bytes(64, "write", cfg) == (88, 0)
    assert dma_wire_bytes(64, "read", cfg) == (24, 84)
    assert dma_wire_bytes(64, "read_write", cfg) == (112, 84)
    assert dma_wire_bytes(0, "read_write", cfg) == (0, 0)


def test_one_gib_is_closed_form():
    cfg, n = PcieConfig(), 2**30
    assert write_wire_bytes(n, cfg) == n + (n // 256) * 24
    assert dma_wire_bytes(n, "read", cfg) == ((n // 512) * 24, n + (n // 256) * 20)
    assert completion_wire_bytes(n, cfg, rcb_chunked=True) == n + (n // 64) * 20


@pytest.mark.parametrize("call, message", [
    (lambda: write_wire_bytes(-1, PcieConfig()), "whole number of bytes >= 0, not -1"),
    (lambda: write_wire_bytes(1.5, PcieConfig()), "whole number of bytes >= 0, not 1.5"),
    (lambda: dma_wire_bytes(64, "copy", PcieConfig()), "DMA op must be 'write', 'read'"),
    (lambda: split(64, 0), "a TLP chunk is a whole number of bytes >= 1, not 0"),
])
def test_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@given(st.integers(0, 20_000), st.integers(1, 5000))
def test_split(n, chunk):
    parts = split(n, chunk)
    assert sum(parts) == n and len(parts) == -(-n // chunk)
    assert all(0 < p <= chunk for p in parts) and all(p == chunk for p in parts[:-1])


@given(configs, st.integers(0, 20_000), st.booleans())
def test_closed_forms_match_tlp_by_tlp(cfg, n, rcb_chunked):
    """Build the TLPs one by one (completions per read request) and add them up."""
    assert write_wire_bytes(n, cfg) == sum(p + cfg.mwr_overhead for p in split(n, cfg.mps))
    requests = split(n, cfg.mrrs)
    assert read_request_wire_bytes(n, cfg) == len(requests) * cfg.mrd_overhead
    chunk = cfg.rcb if rcb_chunked else cfg.mps
    completions = [c for r in requests for c in split(r, chunk)]
    assert max(completions, default=0) <= completion_size(cfg, rcb_chunked)
    assert completion_wire_bytes(n, cfg, rcb_chunked) == sum(
        c + cfg.cpld_overhead for c in completions)
