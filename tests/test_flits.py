"""Flit packer: saturated efficiencies in the spec's ranges, message and data conservation,
and a replay of every packing rule (maxima, data placement, MDH, H-slot headers)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.link.flits import (
    CRD_BYTES, FRAMING, H_SLOT_BYTES, HS_SLOT_BYTES, SLOT_BYTES, Msg, flit_bytes, pack,
    saturated_efficiency, wire_bytes_per_message,
)

MODES = ("68B", "256B", "256B-lopt")
DOWN = [m for m in Msg if m.name.startswith(("M2S", "H2D"))]
UP = [m for m in Msg if m.name.startswith(("S2M", "D2H"))]
DATA_KINDS = {Msg.M2S_RWD, Msg.S2M_DRS, Msg.D2H_DATA, Msg.H2D_DATA}

# Maxima written out from the spec text, independent of the module's tables:
# [spec2.0] 4.2.5 (per 68B flit) and [spec3.x] Table 4-18 (per rolling 128B group).
PER_FLIT = {"D2H_REQ": 4, "D2H_RSP": 2, "D2H_DATA": 4, "S2M_NDR": 2, "S2M_DRS": 3,
            "H2D_REQ": 2, "H2D_RSP": 4, "H2D_DATA": 4, "M2S_REQ": 2, "M2S_RWD": 1}
PER_GROUP = {"D2H_REQ": 4, "D2H_RSP": 4, "D2H_DATA": 4, "S2M_NDR": 6, "S2M_DRS": 3,
             "H2D_REQ": 2, "H2D_RSP": 6, "H2D_DATA": 4, "M2S_REQ": 4, "M2S_RWD": 2}

MDH_68B = {"down": {"H3", "G3"}, "up": {"H2", "G3", "H5", "G6"}}  # [spec2.0] Tables 51, 52


def runs(kinds):
    """Streams made of runs of one kind, so that runs saturate flits and groups."""
    return st.lists(st.tuples(st.sampled_from(kinds), st.integers(1, 16)), max_size=12).map(
        lambda rs: [kind for kind, n in rs for _ in range(n)])


streams = st.sampled_from([DOWN, UP]).flatmap(
    lambda kinds: st.one_of(st.lists(st.sampled_from(kinds), max_size=120), runs(kinds)))


def check_rules(mode, flits):
    """Replay packed flits: data right after its headers, maxima, MDH and H-slot rules."""
    owed = 0  # data slots promised and not yet sent
    per_slot = []  # message counts of every slot, flits concatenated
    for flit in flits:
        assert len(flit) == (4 if mode == "68B" else 15)
        all_data = mode == "68B" and flit[0].fmt == "DATA"
        assert all_data == (mode == "68B" and owed > 3)  # [spec2.0] 4.2.5 rollover
        headers = [sum(k in DATA_KINDS for k in slot.messages) for slot in flit]
        if mode == "68B" and sum(headers) > 1:  # one header, or all in one MDH slot
            assert max(headers) == sum(headers)
        for s, slot in enumerate(flit):
            if mode == "68B" and slot.messages and slot.fmt in MDH_68B[slot.messages[0].direction]:
                assert headers[s] >= 2
            if s == 0 and not all_data or (mode == "256B-lopt" and s == 8):  # H/HS slot
                assert slot.fmt != "DATA"
                if mode != "68B" and headers[s]:
                    assert owed <= 16  # [spec3.x] 4.3.4
            else:
                assert (slot.fmt == "DATA") == (owed > 0)  # data fills the next G-slots
                owed -= slot.fmt == "DATA"
            owed += 4 * headers[s]
            per_slot.append(Counter(k.name for k in slot.messages))
        if mode == "68B":
            total = sum(per_slot[-4:], Counter())
            assert all(total[k] <= PER_FLIT[k] for k in total)
    assert owed == 0
    if mode != "68B":  # rolling 128B groups AB, BC, CD (LOpt: 7-14) and D + next A
        groups = [range(0, 8), range(4, 12), range(7 if mode == "256B-lopt" else 8, 15),
                  range(12, 19)]
        for base in range(0, len(per_slot), 15):
            for group in groups:
                total = sum((per_slot[base + i] for i in group if base + i < len(per_slot)),
                            Counter())
                assert all(total[k] <= PER_GROUP[k] for k in total)


def test_framing_adds_up_to_the_flit():
    assert [flit_bytes(m) for m in MODES] == [68, 256, 256]
    assert FRAMING["68B"]["slots"] == 4 * SLOT_BYTES
    assert FRAMING["256B"]["data"] == H_SLOT_BYTES + 14 * SLOT_BYTES + CRD_BYTES
    assert FRAMING["256B-lopt"]["data"] == (H_SLOT_BYTES + 13 * SLOT_BYTES + HS_SLOT_BYTES
                                           + CRD_BYTES)


def test_saturated_efficiencies_match_the_spec_ranges():
    for traffic in ("read", "write"):
        assert 0.60 <= saturated_efficiency("68B", traffic) <= 0.90  # [spec2.0] "60-90 %"
    assert 0.83 <= saturated_efficiency("256B", "read") <= 0.85
    assert saturated_efficiency("256B-lopt", "read") == pytest.approx(0.81, abs=0.01)
    assert saturated_efficiency("256B", "write") == pytest.approx(0.75)
    assert saturated_efficiency("256B-lopt", "read") < saturated_efficiency("256B", "read")


@pytest.mark.parametrize("mode", MODES)
def test_wire_bytes_per_message_is_the_saturated_share(mode):
    assert wire_bytes_per_message(mode, Msg.S2M_DRS) == pytest.approx(
        64 / saturated_efficiency(mode, "read"))
    assert wire_bytes_per_message(mode, "M2S_RWD") == pytest.approx(
        64 / saturated_efficiency(mode, "write"))
    long = pack([Msg.S2M_DRS] * 3000, mode)
    assert long.efficiency == pytest.approx(saturated_efficiency(mode, "read"), abs=0.005)


def test_message_only_streams_fill_flits_to_the_maxima():
    assert wire_bytes_per_message("68B", Msg.M2S_REQ) == 68 / 2
    assert wire_bytes_per_message("68B", Msg.H2D_RSP) == 68 / 4
    assert wire_bytes_per_message("256B", Msg.S2M_NDR) == pytest.approx(256 / 12)


@pytest.mark.parametrize("kinds", [[Msg.M2S_REQ], [Msg.S2M_NDR], [Msg.D2H_REQ, Msg.D2H_RSP],
                                   [Msg.H2D_REQ, Msg.H2D_RSP]])
@pytest.mark.parametrize("mode", MODES)
def test_requests_and_responses_carry_no_data(mode, kinds):
    result = pack(kinds * 50, mode)
    assert result.data_bytes == 0 and result.efficiency == 0.0 and result.flits > 0


@settings(max_examples=150, deadline=None)
@given(messages=streams, mode=st.sampled_from(MODES))
def test_every_message_and_line_goes_out_exactly_once(messages, mode):
    result = pack(messages, mode, detail=True)
    assert result.messages == Counter(messages)
    assert Counter(k for flit in result.detail for slot in flit for k in slot.messages) \
        == Counter(messages)
    lines = sum(k in DATA_KINDS for k in messages)
    data_slots = sum(slot.fmt == "DATA" for flit in result.detail for slot in flit)
    assert result.data_bytes == 64 * lines == SLOT_BYTES * data_slots
    assert len(result.detail) == result.flits
    assert result.wire_bytes == result.flits * flit_bytes(mode)
    if mode == "68B":
        assert result.efficiency <= 64 / 68


@settings(max_examples=300, deadline=None)
@given(messages=streams, mode=st.sampled_from(MODES))
def test_packing_rules_hold_in_every_flit(messages, mode):
    check_rules(mode, pack(messages, mode, detail=True).detail)


@pytest.mark.parametrize("kind", list(Msg))
@pytest.mark.parametrize("mode", MODES)
def test_packing_rules_hold_in_saturated_streams(mode, kind):
    check_rules(mode, pack([kind] * 200, mode, detail=True).detail)


def test_directions_and_bad_arguments():
    assert {m.direction for m in DOWN} == {"down"} and {m.direction for m in UP} == {"up"}
    with pytest.raises(ValueError, match="one direction"):
        pack([Msg.M2S_REQ, Msg.S2M_NDR], "68B")
    with pytest.raises(ValueError, match="unknown flit mode"):
        pack([Msg.M2S_REQ], "128B")
    with pytest.raises(ValueError, match="unknown traffic"):
        saturated_efficiency("68B", "copy")
    assert pack([], "256B").flits == 0
