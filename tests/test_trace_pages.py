"""Dense page ids: first-seen order across chunks, sized by the footprint."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from cxlsim.traces import import_trace, open_trace
from cxlsim.traces.pages import PageCompactor


def _reference(addrs, shift=12):
    seen: dict[int, int] = {}
    return [seen.setdefault(a >> shift, len(seen)) for a in addrs]


@settings(max_examples=80, deadline=None)
@given(chunks=st.lists(st.lists(st.integers(0, 2**47 - 1), max_size=60), max_size=6),
       narrow=st.booleans())
def test_ids_are_first_seen_order_across_chunks(chunks, narrow):
    if narrow:  # many repeats: a few pages spread over the 47-bit space
        chunks = [[(a % 7) << 40 | (a % 3) for a in c] for c in chunks]
    pc = PageCompactor()
    got = [i for c in chunks for i in pc.ids(np.array(c, dtype=np.uint64)).tolist()]
    flat = [a for c in chunks for a in c]
    assert got == _reference(flat)
    assert pc.footprint == len({a >> 12 for a in flat})
    assert pc.pages().tolist() == list(dict.fromkeys(a >> 12 for a in flat))


def test_many_pages_grow_the_table_mid_chunk():
    addrs = np.random.default_rng(5).integers(0, 2**47, 20_000, dtype=np.uint64)
    addrs = np.concatenate([addrs, addrs[::-3]])  # repeats after the table grew
    pc = PageCompactor()
    got = np.concatenate([pc.ids(addrs[:7]), pc.ids(addrs[7:])])
    assert got.tolist() == _reference(addrs.tolist())
    assert pc.pages().tolist() == list(dict.fromkeys((addrs >> np.uint64(12)).tolist()))


def test_a_lackey_trace_compacts_to_its_footprint(tmp_path):
    native = tmp_path / "lackey.arrow"
    import_trace(REPO / "traces" / "samples" / "lackey.txt", native, "lackey")
    chunks = list(open_trace(native).chunks(["addr"]))
    addr = np.concatenate([c["addr"] for c in chunks])
    assert int(addr.max() - addr.min()) >> 12 > 1000  # sparse: far apart regions
    pc = PageCompactor()
    ids = np.concatenate([pc.ids(c["addr"]) for c in chunks])
    assert ids.max() + 1 == pc.footprint == len(np.unique(addr >> np.uint64(12)))
    assert ids[0] == 0 and np.all(np.diff(np.maximum.accumulate(ids)) <= 1)
