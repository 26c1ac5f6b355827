"""Unit strings: parsing examples, rejection messages, exact round trips, pydantic."""

from __future__ import annotations

import math
from typing import Annotated

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from cxlsim.units import (
    Bandwidth, Frequency, Percent, Rate, Size, Time, UnitError,
    format_bandwidth, format_frequency, format_percent, format_rate, format_size, format_time,
    parse_bandwidth, parse_frequency, parse_percent, parse_rate, parse_size, parse_time,
    shown_in,
)


@pytest.mark.parametrize("parse, text, expected", [
    (parse_time, "90 ns", 90.0),
    (parse_time, "1.1 us", 1100.0),
    (parse_time, "1.1us", 1100.0),
    (parse_time, "2 µs", 2000.0),
    (parse_time, "250 ps", 0.25),
    (parse_time, "1e3 ns", 1000.0),
    (parse_time, "3 ms", 3e6),
    (parse_time, "1 s", 1e9),
    (parse_time, "0", 0.0),
    (parse_time, 0, 0.0),
    (parse_size, "8 GiB", 8 * 2**30),
    (parse_size, "8 GB", 8 * 10**9),
    (parse_size, "4 KiB", 4096),
    (parse_size, "4 kB", 4000),
    (parse_size, "4 KB", 4000),
    (parse_size, "64 B", 64),
    (parse_size, "64", 64),
    (parse_size, 64, 64),
    (parse_size, "1.5 KiB", 1536),
    (parse_bandwidth, "64 GB/s", 64e9),
    (parse_bandwidth, "25 Gb/s", 3.125e9),
    (parse_bandwidth, "100 Mbps", 12.5e6),
    (parse_bandwidth, "16 GiB/s", 16.0 * 2**30),
    (parse_rate, "32 GT/s", 32e9),
    (parse_rate, "6400 MT/s", 6.4e9),
    (parse_frequency, "2.35 GHz", 2.35e9),
    (parse_frequency, "800 MHz", 8e8),
    (parse_percent, "50 %", 0.5),
    (parse_percent, "50%", 0.5),
    (parse_percent, "12.5 %", 0.125),
    (parse_percent, "100 %", 1.0),
    (parse_percent, 0.25, 0.25),
    (parse_percent, "0.25", 0.25),
])
def test_parse_examples(parse, text, expected):
    result = parse(text)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize("parse, text, message", [
    (parse_bandwidth, "64 GBs",
     "expected a bandwidth such as '64 GB/s' or '25 Gb/s'; found '64 GBs' (unknown unit 'GBs'"),
    (parse_bandwidth, "10 ms/s", "found '10 ms/s' (unknown unit 'ms/s')"),
    (parse_bandwidth, "10 GBps", "ambiguous unit 'GBps'"),
    (parse_time, "-5 ns", "found '-5 ns' (must not be negative)"),
    (parse_size, "-5 B", "must not be negative"),
    (parse_size, "8 K", "ambiguous unit 'K': write 'KB' for 10^3 steps or 'KiB' for 2^10 steps"),
    (parse_size, "8 k", "ambiguous unit 'k'"),
    (parse_size, "8 G", "ambiguous unit 'G'"),
    (parse_size, "8 Gb", "'Gb' means bits"),
    (parse_size, "1.5 B", "not a whole number of bytes: 1.5 B"),
    (parse_size, "0.1 KiB", "not a whole number of bytes: 102.4 B"),
    (parse_time, "90", "found '90' (a unit is required, e.g. '90 ns')"),
    (parse_time, 90, "a unit is required"),
    (parse_rate, "32", "a unit is required, e.g. '32 GT/s'"),
    (parse_percent, "150", "a bare number is a fraction from 0 to 1; for a percentage write '150 %'"),
    (parse_percent, "150 %", "must be at most 100 %"),
    (parse_time, float("nan"), "found nan (not a finite number)"),
    (parse_time, "nan ns", "not a finite number"),
    (parse_bandwidth, "inf GB/s", "not a finite number"),
    (parse_time, "1e400 s", "too large"),
    (parse_time, True, "not a number or a string with a unit"),
    (parse_time, "fast", "not a number followed by a unit"),
    (parse_frequency, "1 khz", "did you mean 'kHz'?"),
    (parse_bandwidth, "0 GB/s", "found '0 GB/s' (must be greater than zero)"),
    (parse_bandwidth, 0, "must be greater than zero"),
    (parse_rate, "0 GT/s", "must be greater than zero"),
    (parse_frequency, "0 Hz", "must be greater than zero"),
    (parse_size, "1e400 GiB", "found '1e400 GiB' (too large)"),
    (parse_size, "18000000000 GiB", "too large"),  # beyond 2^64 bytes
])
def test_rejections(parse, text, message):
    with pytest.raises(UnitError) as err:
        parse(text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("fmt, value, expected", [
    (format_time, 90.0, "90 ns"),
    (format_time, 1100.0, "1.1 us"),
    (format_time, 0.25, "250 ps"),
    (format_time, 0.0, "0 ns"),
    (format_time, 2e9, "2 s"),
    (format_size, 8 * 2**30, "8 GiB"),
    (format_size, 8 * 10**9, "8 GB"),
    (format_size, 1500, "1500 B"),
    (format_size, 0, "0 B"),
    (format_bandwidth, 64e9, "64 GB/s"),
    (format_bandwidth, 3.125e9, "3.125 GB/s"),
    (format_rate, 32e9, "32 GT/s"),
    (format_frequency, 2.35e9, "2.35 GHz"),
    (format_percent, 0.125, "12.5 %"),
    (format_percent, 0.0, "0 %"),
])
def test_format_examples(fmt, value, expected):
    assert fmt(value) == expected


@pytest.mark.parametrize("fmt, value, digits, expected", [
    (format_time, 1234.5678, 3, "1.23 us"),
    (format_time, 999.96, 3, "1 us"),
    (format_size, 1234567, 3, "1.23 MB"),
    (format_size, 8 * 2**30, 3, "8 GiB"),
    (format_bandwidth, 1 / 3 * 1e9, 2, "330 MB/s"),
    (format_percent, 1 / 3, 3, "33.3 %"),
])
def test_format_digits(fmt, value, digits, expected):
    assert fmt(value, digits) == expected


floats = st.floats(min_value=0, max_value=1e15, allow_nan=False, allow_infinity=False)


@pytest.mark.parametrize("fmt, parse", [
    (format_time, parse_time),
    (format_bandwidth, parse_bandwidth),
    (format_rate, parse_rate),
    (format_frequency, parse_frequency),
])
@given(value=floats)
def test_float_round_trip(fmt, parse, value):
    if value == 0 and parse is not parse_time:  # a zero rate is rejected, see test_rejections
        return
    assert parse(fmt(value)) == value


@given(value=st.floats(min_value=0, max_value=1, allow_nan=False, allow_infinity=False))
def test_percent_round_trip(value):
    assert parse_percent(format_percent(value)) == value


@given(value=st.integers(0, 2**50))
def test_size_round_trip(value):
    assert parse_size(format_size(value)) == value


@given(value=floats, digits=st.integers(1, 6))
def test_rounded_format_parses(value, digits):
    assert math.isclose(parse_time(format_time(value, digits)), value, rel_tol=10.0**(1 - digits))


class Link(BaseModel):
    latency: Time
    buffer: Size
    bandwidth: Bandwidth
    rate: Rate
    clock: Frequency
    load: Percent


def test_pydantic_model_json_round_trip():
    link = Link(latency="90 ns", buffer="8 GiB", bandwidth="25 Gb/s", rate="32 GT/s",
                clock="2.35 GHz", load="50 %")
    assert link.model_dump() == {"latency": 90.0, "buffer": 8 * 2**30, "bandwidth": 3.125e9,
                                 "rate": 32e9, "clock": 2.35e9, "load": 0.5}
    dumped = link.model_dump(mode="json")
    assert dumped == {"latency": "90 ns", "buffer": "8 GiB", "bandwidth": "3.125 GB/s",
                      "rate": "32 GT/s", "clock": "2.35 GHz", "load": "50 %"}
    assert Link.model_validate(dumped) == link
    assert Link.model_validate_json(link.model_dump_json()) == link


def test_pydantic_error_is_the_unit_message():
    with pytest.raises(ValidationError) as err:
        Link(latency="90", buffer="8 GiB", bandwidth="64 GBs", rate="32 GT/s",
             clock="2.35 GHz", load="50 %")
    messages = {e["loc"][0]: e["msg"] for e in err.value.errors()}
    assert messages["latency"].endswith("found '90' (a unit is required, e.g. '90 ns')")
    assert "unknown unit 'GBs'" in messages["bandwidth"]


def test_json_schema_mentions_units():
    schema = Link.model_json_schema()["properties"]["latency"]
    assert "90 ns" in schema["examples"]


class KernelKnobs(BaseModel):
    rate_limit: Annotated[Bandwidth, shown_in("MiB/s")] | None = 65536 * 2**20
    period: Annotated[Time, shown_in("ms")] = 1e9


@pytest.mark.parametrize("field, value, text", [
    ("rate_limit", 65536 * 2**20, "65536 MiB/s"),   # the kernel's 65536 MB/s, not 68.7 GB/s
    ("rate_limit", "1 GB/s", "1 GB/s"),             # 953.67431640625 MiB/s: more digits
    ("rate_limit", None, None),
    ("period", 60e9, "60000 ms"),                   # the sysctl's milliseconds
    ("period", "100 us", "100 us"),                 # below one ms: the readable unit
])
def test_a_field_shows_its_sources_unit(field, value, text):
    knobs = KernelKnobs(**{field: value})
    assert knobs.model_dump(mode="json")[field] == text
    assert KernelKnobs.model_validate(knobs.model_dump(mode="json")) == knobs  # exact
    assert knobs.model_dump()[field] == getattr(knobs, field)  # numbers in base units


@given(value=floats)
def test_shown_in_round_trips(value):
    knobs = KernelKnobs(period=value)
    assert KernelKnobs.model_validate(knobs.model_dump(mode="json")).period == value


def test_shown_in_refuses_an_unknown_unit():
    with pytest.raises(ValueError, match="unknown unit 'MBps'"):
        shown_in("MBps")
