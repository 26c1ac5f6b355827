"""Importers, each on a sample in its tool's format, and their answers to bad input."""

from __future__ import annotations

import gzip
import json
import lzma
import zlib
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO
from cxlsim.errors import InputError
from cxlsim.traces.formats import FORMATS, export_trace, import_trace
from cxlsim.traces.formats.champsim import VARIANTS
from cxlsim.traces.native import TraceMeta, open_trace, write_trace

SAMPLES = REPO / "traces" / "samples"


def imported(tmp_path: Path, src: Path, fmt: str, *options: str, skip_bad: bool = False):
    """(columns, metadata, report) of importing ``src``."""
    out = tmp_path / "out.arrow"
    report = import_trace(src, out, fmt, options, skip_bad)
    trace = open_trace(out)
    return trace.read(), trace.meta, report


def bad_import(tmp_path: Path, text: str | bytes, fmt: str, *options: str) -> str:
    """The message of importing ``text`` in ``fmt``; checks nothing is left behind."""
    src = tmp_path / "in.txt"
    src.write_bytes(text.encode() if isinstance(text, str) else text)
    with pytest.raises(InputError) as err:
        import_trace(src, tmp_path / "out.arrow", fmt, options)
    assert not (tmp_path / "out.arrow").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.txt"]  # no temporary file left
    return str(err.value)


def test_every_format_has_a_sample_and_a_test():
    tested = {"csv", "lackey", "pin", "ramulator", "ramulator-cpu", "champsim", "perf-mem",
              "perf-script", "damon"}
    assert set(FORMATS) == tested


# --- lackey -----------------------------------------------------------------------------

def test_lackey_sample(tmp_path):
    cols, meta, report = imported(tmp_path, SAMPLES / "lackey.txt", "lackey")
    assert meta.clock == "instructions"
    assert cols["time"].tolist() == [1, 2, 3, 3, 5, 5, 5]  # index of the instruction
    assert cols["addr"].tolist() == [0x1ffefffd88, 0x404028, 0x1ffefffd80, 0x1ffefffd80,
                                     0x4a5e40, 0x4a5e44, 0x4a6000]
    assert cols["op"].tolist() == [1, 0, 0, 1, 0, 0, 1]  # M is a load then a store
    assert cols["size"].tolist() == [8, 8, 4, 4, 4, 4, 8]
    assert (report.records, report.lines, report.skipped) == (7, 19, 0)


@pytest.mark.parametrize("line", [" X 0400,4", " L 0400", " L 0400,", " L zz,4", "L0400,4",
                                  " L 0400,4 extra", " L 11112222333344445,4"])
def test_lackey_bad_line(tmp_path, line):
    message = bad_import(tmp_path, f"I  0400,4\n{line}\n", "lackey")
    assert message == (f"{tmp_path / 'in.txt'}:2: expected a lackey line 'I  ADDR,SIZE' or "
                       f"' L|S|M ADDR,SIZE' (hex address, decimal size); found {line!r}")


def test_skip_bad_counts_and_reports(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("I  0400,4\n L 10,4\n bad\n S 20,8\n also bad\n")
    cols, _, report = imported(tmp_path, src, "lackey", skip_bad=True)
    assert cols["addr"].tolist() == [0x10, 0x20]
    assert report.skipped == 2
    assert report.first_bad is not None and report.first_bad.startswith(f"{src}:3: expected")


def test_line_numbers_across_blocks(tmp_path, monkeypatch):
    import cxlsim.traces.formats._text as text

    monkeypatch.setattr(text, "BLOCK_BYTES", 64)
    lines = [f" L {i:x},4" for i in range(100)]
    lines[77] = " L nothex,4"
    message = bad_import(tmp_path, "\n".join(lines), "lackey")
    assert message.startswith(f"{tmp_path / 'in.txt'}:78: expected a lackey line")


def test_gzip_input(tmp_path):
    src = tmp_path / "trace.txt.gz"
    src.write_bytes(gzip.compress((SAMPLES / "lackey.txt").read_bytes()))
    cols, _, _ = imported(tmp_path, src, "lackey")
    assert len(cols["addr"]) == 7


def test_cut_compressed_input(tmp_path):
    data = gzip.compress(b"".join(b" L %x,4\n" % i for i in range(100000)))
    message = bad_import(tmp_path, data[:len(data) // 2], "lackey")
    assert "compressed data damaged or cut short after line" in message


def test_missing_input(tmp_path):
    with pytest.raises(InputError, match="^nope.txt: cannot open: No such file or directory$"):
        import_trace("nope.txt", tmp_path / "o.arrow", "lackey")


def test_unknown_format(tmp_path):
    with pytest.raises(InputError, match="^--from: unknown format 'valgrind'; expected one of "
                                         "csv, lackey, pin,"):
        import_trace(SAMPLES / "lackey.txt", tmp_path / "o.arrow", "valgrind")


def test_no_line_ends(tmp_path, monkeypatch):
    import cxlsim.traces.formats._text as text

    monkeypatch.setattr(text, "MAX_LINE", 100)
    monkeypatch.setattr(text, "BLOCK_BYTES", 64)
    message = bad_import(tmp_path, b"\x00" * 300, "lackey")
    assert message.endswith(":1: line longer than 100 bytes; is this a text trace?")


# --- pin --------------------------------------------------------------------------------

def test_pin_sample(tmp_path):
    cols, meta, _ = imported(tmp_path, SAMPLES / "pinatrace.out", "pin")
    assert meta.clock == "sequence"
    assert cols["time"].tolist() == list(range(6))
    assert cols["op"].tolist() == [1, 0, 0, 1, 0, 1]
    assert cols["addr"][0] == 0x7ffd5a8e6f08 and cols["addr"][-1] == 0x55d0c2c04018


@pytest.mark.parametrize("line", ["0x7f: X 0x10", "0x7f R 0x10", "0x7f: R", "0x7f: R 0xzz"])
def test_pin_bad_line(tmp_path, line):
    message = bad_import(tmp_path, f"# header\n{line}\n", "pin")
    assert message == (f"{tmp_path / 'in.txt'}:2: expected a pinatrace line 'IP: R ADDR' or "
                       f"'IP: W ADDR' (0x-hex IP and address); found {line!r}")


# --- ramulator --------------------------------------------------------------------------

def test_ramulator_sample(tmp_path):
    cols, meta, _ = imported(tmp_path, SAMPLES / "ramulator.trace", "ramulator")
    assert meta.clock == "sequence"
    assert cols["addr"].tolist() == [0x12345680, 0x4cbd56c0, 0x35d46f00, 0x696fed40,
                                     0x7876af80, 0x12345690]
    assert cols["op"].tolist() == [0, 1, 0, 0, 1, 0]


def test_ramulator2_load_store_lines(tmp_path):
    src = tmp_path / "t.trace"
    src.write_text("LD 0x10\nST 0x20\nld 30\n")
    cols, _, _ = imported(tmp_path, src, "ramulator")
    assert cols["addr"].tolist() == [0x10, 0x20, 0x30] and cols["op"].tolist() == [0, 1, 0]


@pytest.mark.parametrize("line", ["0x10 X", "0x10", "R 0x10", "0x10 R W", "LD0x10"])
def test_ramulator_bad_line(tmp_path, line):
    message = bad_import(tmp_path, f"0x20 W\n{line}\n", "ramulator")
    assert message == (f"{tmp_path / 'in.txt'}:2: expected a Ramulator memory trace line "
                       f"'ADDR R|W' or 'LD|ST ADDR' (hex address); found {line!r}")


def test_ramulator_cpu_sample(tmp_path):
    cols, meta, report = imported(tmp_path, SAMPLES / "ramulator-cpu.trace", "ramulator-cpu")
    assert meta.clock == "instructions"
    # 3 bubbles then a read at instruction 3; 1 more then a read at 5; 6 more then a read
    # and a write-back at 12; ...
    assert cols["time"].tolist() == [3, 5, 12, 12, 13, 26, 29, 29]
    assert cols["op"].tolist() == [0, 0, 0, 1, 0, 0, 0, 1]
    assert cols["addr"][:4].tolist() == [20734016, 20846400, 20734208, 20846400]
    assert report.lines == 6


@pytest.mark.parametrize("line", ["3", "x 100", "3 100 200 300", "3 abc"])
def test_ramulator_cpu_bad_line(tmp_path, line):
    message = bad_import(tmp_path, f"{line}\n", "ramulator-cpu")
    assert message == (f"{tmp_path / 'in.txt'}:1: expected a Ramulator CPU trace line "
                       f"'INSTRUCTIONS READ_ADDR [WRITEBACK_ADDR]' (decimal numbers); "
                       f"found {line!r}")


# --- ChampSim ---------------------------------------------------------------------------

def test_champsim_sample(tmp_path):
    cols, meta, report = imported(tmp_path, SAMPLES / "champsim.trace", "champsim")
    assert meta.clock == "instructions"
    assert cols["time"].tolist() == [0, 2, 2, 3, 5, 5, 7, 7]
    assert cols["op"].tolist() == [0, 0, 0, 1, 0, 1, 1, 1]  # loads before stores
    assert cols["addr"].tolist() == [0x7ffd5a8e6f08, 0x601040, 0x601080, 0x601040,
                                     0x7f3a1c2d9e70, 0x7f3a1c2d9e70, 0x601100, 0x601140]
    assert report.lines == 8


@pytest.mark.parametrize("variant", ["load-type", "cloudsuite"])
def test_champsim_variants(tmp_path, variant):
    record = VARIANTS[variant]
    data = np.zeros(3, record)
    data["loads"][1, 3] = 0x1000
    data["stores"][2, -1] = 0x2000
    src = tmp_path / "t.champsim"
    src.write_bytes(data.tobytes())
    cols, _, _ = imported(tmp_path, src, "champsim", f"variant={variant}")
    assert cols["time"].tolist() == [1, 2] and cols["op"].tolist() == [0, 1]
    assert cols["addr"].tolist() == [0x1000, 0x2000]
    assert record.itemsize == {"load-type": 72, "cloudsuite": 96}[variant]


def test_champsim_truncated(tmp_path):
    data = (SAMPLES / "champsim.trace").read_bytes()[:64 * 5 + 17]
    message = bad_import(tmp_path, data, "champsim")
    assert message == (f"{tmp_path / 'in.txt'}: truncated ChampSim trace: 5 whole records "
                       "read, then 17 stray bytes (a standard record is 64 bytes)")


def test_champsim_truncated_skip_bad_keeps_whole_records(tmp_path):
    src = tmp_path / "t.champsim"
    src.write_bytes((SAMPLES / "champsim.trace").read_bytes()[:64 * 4 + 3])
    cols, _, report = imported(tmp_path, src, "champsim", skip_bad=True)
    assert cols["time"].tolist() == [0, 2, 2, 3]
    assert report.skipped == 1 and "4 whole records read" in report.first_bad


def test_champsim_xz_cut_short(tmp_path):
    data = lzma.compress((SAMPLES / "champsim.trace").read_bytes() * 200)
    message = bad_import(tmp_path, data[:len(data) // 2], "champsim")
    assert message.startswith(f"{tmp_path / 'in.txt'}: truncated ChampSim trace: ")
    assert message.endswith("whole records read, the compressed data is cut short")


def test_champsim_xz(tmp_path):
    src = tmp_path / "t.champsimtrace.xz"
    src.write_bytes(lzma.compress((SAMPLES / "champsim.trace").read_bytes()))
    cols, _, _ = imported(tmp_path, src, "champsim")
    assert len(cols["addr"]) == 8


# --- perf -------------------------------------------------------------------------------

def test_perf_mem_sample_with_period(tmp_path):
    cols, meta, _ = imported(tmp_path, SAMPLES / "perf-mem.txt", "perf-mem", "period=5003")
    assert meta.clock == "sequence"
    assert cols["op"].tolist() == [0, 0, 1, 0, 1]  # DSRC ...42 load, ...44 store
    assert cols["thread"].tolist() == [4171, 4171, 4173, 4173, 4171]
    assert cols["weight"].tolist() == [5003] * 5
    assert cols["addr"][0] == 0x7ffc3e2a1b40


def test_perf_mem_header_locates_physical_addresses(tmp_path):
    src = tmp_path / "phys.txt"
    src.write_text("# PID, TID, IP, ADDR, PHYS ADDR, DATA PAGE SIZE, LOCAL WEIGHT, DSRC, SYMBOL\n"
                   "20134 20134 0xffffffffb5bd2fd0 0x16fff9a2 0x44e96a308 4K 1168 0x5080144 "
                   "vmlinux:perf_ctx_unlock\n"
                   "20134,20135,0xffffffffb63f645c,0xffffffffb752b814,0xcfb52b814,2M,225,"
                   "0x26a100142,vmlinux:_raw_spin_lock\n")
    cols, _, _ = imported(tmp_path, src, "perf-mem", "addr=physical")
    assert cols["addr"].tolist() == [0x44e96a308, 0xcfb52b814]
    assert cols["op"].tolist() == [1, 0] and cols["thread"].tolist() == [20134, 20135]


def test_perf_mem_neither_load_nor_store(tmp_path):
    message = bad_import(tmp_path, " 1 2 0x1 0x7f00 31 0x68100108 a.out:main\n", "perf-mem")
    assert message == (f"{tmp_path / 'in.txt'}:1: expected a perf mem -D sample 'PID TID IP "
                       "ADDR LOCAL WEIGHT DSRC SYMBOL' whose DSRC marks a load or a store; "
                       "found ' 1 2 0x1 0x7f00 31 0x68100108 a.out:main'")


def test_perf_mem_option_errors(tmp_path):
    src = SAMPLES / "perf-mem.txt"
    with pytest.raises(InputError, match=r"^--option period=0: expected a whole number "
                                         r"1\.\.4294967295; found '0'$"):
        import_trace(src, tmp_path / "o.arrow", "perf-mem", ["period=0"])
    with pytest.raises(InputError, match="the header lacks column.s. PHYS ADDR .physical "
                                         "addresses need perf mem -p.; expected '# PID, TID"):
        import_trace(src, tmp_path / "o.arrow", "perf-mem", ["addr=physical"])
    with pytest.raises(InputError, match="unknown parameter 'perod' for format perf-mem; did "
                                         "you mean 'period'"):
        import_trace(src, tmp_path / "o.arrow", "perf-mem", ["perod=3"])


def test_perf_script_sample(tmp_path):
    cols, meta, _ = imported(tmp_path, SAMPLES / "perf-script.txt", "perf-script")
    assert meta.clock == "ns"
    assert cols["time"][0] == 81432118264000 and cols["time"][-1] == 81432119001000
    assert cols["weight"].tolist() == [20011, 20011, 10007, 20011, 10007]
    assert cols["op"].tolist() == [0, 0, 1, 0, 1]
    assert cols["thread"].tolist() == [4171, 4171, 4173, 4173, 4188]  # "Web Content" too


def test_perf_script_without_period_takes_the_option(tmp_path):
    src = tmp_path / "s.txt"
    src.write_text("a.out 12/34 5.000000001: cpu/mem-stores/P: 0x10\n"
                   "a.out 34 [001] 6.5: ibs_op//: 20 |OP LOAD|LVL L1 hit\n")
    cols, _, _ = imported(tmp_path, src, "perf-script", "period=7")
    assert cols["time"].tolist() == [5000000001, 6500000000]
    assert cols["thread"].tolist() == [34, 34] and cols["weight"].tolist() == [7, 7]
    assert cols["op"].tolist() == [1, 0] and cols["addr"].tolist() == [0x10, 0x20]


@pytest.mark.parametrize("line", ["a.out 12 5.5: cycles: 7f00", "a.out 12 noclock: loads: 10",
                                  "a.out 12 5.5: mem-loads: zz"])
def test_perf_script_bad_line(tmp_path, line):
    message = bad_import(tmp_path, f"{line}\n", "perf-script")
    assert message == (f"{tmp_path / 'in.txt'}:1: expected a perf script line 'COMM TID [CPU] "
                       "SECONDS: [PERIOD] EVENT: ADDR' with 'load' or 'store' in the event; "
                       f"found {line!r}")


# --- DAMON ------------------------------------------------------------------------------

def _damon_expected(cols):
    assert cols["addr"].tolist() == [94371840000, 94380228608, 140737479966720] * 2
    assert cols["size"].tolist() == [8388608, 33820672, 8388608] * 2
    assert cols["weight"].tolist() == [12, 0, 20, 9, 1, 18]
    assert cols["op"].tolist() == [0] * 6 and cols["region"].tolist() == [0] * 6


def test_damon_json_sample(tmp_path):
    cols, meta, _ = imported(tmp_path, SAMPLES / "damon.json", "damon")
    _damon_expected(cols)
    assert cols["time"].tolist() == [1100000000] * 3 + [1200000000] * 3
    assert meta.regions == {0: "target 0"} and meta.clock == "ns"


def test_damon_json_compressed(tmp_path):
    src = tmp_path / "damon.data"
    src.write_bytes(zlib.compress((SAMPLES / "damon.json").read_bytes()))
    _damon_expected(imported(tmp_path, src, "damon")[0])


def test_damon_perf_script_sample(tmp_path):
    cols, _, _ = imported(tmp_path, SAMPLES / "damon-perf.txt", "damon")
    _damon_expected(cols)
    assert cols["time"][0] == 82877315633000


def test_damon_old_records_and_big_regions(tmp_path):
    records = [{"target_id": 7, "snapshots": [
        {"start_time": 0, "end_time": 100, "regions": [
            {"start": 0, "end": 5 << 30, "nr_accesses": 3, "age": 1}]}]},
               {"target_id": 9, "snapshots": [
        {"start_time": 0, "end_time": 50, "regions": [
            {"start": 4096, "end": 8192, "nr_accesses": "2", "age": 0}]}]}]
    src = tmp_path / "old.json"
    src.write_text(json.dumps(records))
    cols, meta, _ = imported(tmp_path, src, "damon")
    assert cols["time"].tolist() == [50, 100, 100, 100]  # in time order
    assert cols["size"].tolist() == [4096, 1 << 31, 1 << 31, 1 << 30]  # 5 GiB in pieces
    assert cols["addr"].tolist() == [4096, 0, 1 << 31, 2 << 31]
    assert cols["region"].tolist() == [1, 0, 0, 0]
    assert meta.regions == {0: "target 7", 1: "target 9"}


def test_damon_bad_json(tmp_path):
    message = bad_import(tmp_path, '[{"target_id": 0,\n "snapshots": [}]', "damon")
    assert message == f"{tmp_path / 'in.txt'}:2:16: not valid JSON (Expecting value)"


def test_damon_bad_region(tmp_path):
    record = [{"target_id": 0, "snapshots": [{"end_time": "100", "regions": [
        {"start": "10", "end": "20", "nr_accesses": 1},
        {"start": "4.000 KiB", "end": "20", "nr_accesses": 1}]}]}]
    message = bad_import(tmp_path, json.dumps(record), "damon")
    assert message == (f"{tmp_path / 'in.txt'}: [0].snapshots[0].regions[1]: start: expected "
                       "a whole number; found '4.000 KiB'")


def test_damon_bad_perf_line(tmp_path):
    text = ("kdamond.0 1 [000] 5.0: damon:damon_aggregated: target_id=0 nr_regions=1 "
            "10-20: 1 1\n"
            "kdamond.0 1 [000] 5.0: damon:damon_aggregated: target_id=0 nr_regions=1 10-: 1\n")
    message = bad_import(tmp_path, text, "damon")
    assert message.startswith(f"{tmp_path / 'in.txt'}:2: expected a damo perf_script line")


# --- CSV --------------------------------------------------------------------------------

def test_csv_sample(tmp_path):
    cols, meta, _ = imported(tmp_path, SAMPLES / "accesses.csv", "csv")
    assert meta.clock == "ns" and meta.regions == {0: "heap", 1: "page cache"}
    assert cols["time"].tolist() == [0, 12, 25, 31, 47]
    assert cols["page_type"].tolist() == [0, 0, 1, 0, 0]
    assert cols["size"].tolist() == [64, 64, 4096, 8, 8]
    assert "weight" not in cols


def test_csv_minimal_columns(tmp_path):
    src = tmp_path / "t.csv"
    src.write_text("op,addr\nw,16\nR,0x20\n")
    cols, meta, _ = imported(tmp_path, src, "csv")
    assert meta.clock == "sequence"
    assert cols["time"].tolist() == [0, 1] and cols["addr"].tolist() == [16, 32]


@pytest.mark.parametrize("header, message", [
    ("time,adr,op", "unknown column 'adr' in the header; did you mean 'addr'?; columns are "
                    "time, addr, op, size, thread, page_type, region, weight"),
    ("time,addr", "the header lacks op; expected at least 'addr,op'"),
    ("addr,op,addr", "column 'addr' appears twice in the header"),
])
def test_csv_bad_header(tmp_path, header, message):
    assert bad_import(tmp_path, f"# a comment\n{header}\n", "csv") == (
        f"{tmp_path / 'in.txt'}:2: {message}")


@pytest.mark.parametrize("row, expected", [
    ("1,0x10,X", "op to be R or W (it is 'X')"),
    ("1,0x10", "3 comma-separated values (time,addr,op), not 2"),
    ("1,0x10,R,extra", "3 comma-separated values (time,addr,op), not 4"),
    ("x,0x10,R", "time to be a whole number from 0 to 18,446,744,073,709,551,615, decimal or "
                 "0x-hex (it is 'x')"),
    ("1,0x10,R,", "3 comma-separated values (time,addr,op), not 4"),
    ("70000,0x10,R", "region to be a whole number from 0 to 65,535, decimal or 0x-hex (it is "
                     "'70000')"),
])
def test_csv_bad_row(tmp_path, row, expected):
    header = "region,addr,op" if row.startswith("70000") else "time,addr,op"
    message = bad_import(tmp_path, f"{header}\n1,2,R\n{row}\n", "csv")
    assert message == f"{tmp_path / 'in.txt'}:3: expected {expected}; found {row!r}"


def test_csv_bad_metadata(tmp_path):
    assert bad_import(tmp_path, "# clock: cycles\naddr,op\n", "csv") == (
        f"{tmp_path / 'in.txt'}:1: clock 'cycles': expected one of ns, instructions, sequence")
    assert bad_import(tmp_path, "# region x: heap\naddr,op\n", "csv").endswith(
        ":1: expected '# region N: name' with N from 0 to 65535; found '# region x: heap'")
    assert bad_import(tmp_path, "# only comments\n", "csv") == (
        f"{tmp_path / 'in.txt'}: no header line; expected a line naming the columns, e.g. "
        "'time,addr,op,size'")


# --- exporters --------------------------------------------------------------------------

def test_ramulator_export(tmp_path):
    src = write_trace(tmp_path / "t.arrow", {"addr": np.array([0x10, 0xabc]),
                                             "op": np.array([0, 1])})
    export_trace(src, tmp_path / "t.trace", "ramulator")
    assert (tmp_path / "t.trace").read_text() == "0x10 R\n0xabc W\n"


def test_champsim_export_packs_an_instruction(tmp_path):
    src = write_trace(tmp_path / "t.arrow", {
        "time": np.array([1, 1, 1, 4]), "addr": np.array([0x10, 0x20, 0x30, 0x40]),
        "op": np.array([0, 0, 1, 1])}, meta=TraceMeta(clock="instructions"))
    export_trace(src, tmp_path / "t.champsim", "champsim")
    data = np.frombuffer((tmp_path / "t.champsim").read_bytes(), VARIANTS["standard"])
    assert len(data) == 5  # instructions 0..4
    assert data["loads"][1, :2].tolist() == [0x10, 0x20] and data["stores"][1, 0] == 0x30
    assert data["stores"][4, 0] == 0x40 and not data["loads"][[0, 2, 3]].any()


def test_champsim_export_refuses_what_it_cannot_hold(tmp_path):
    crowded = write_trace(tmp_path / "t.arrow", {
        "time": np.zeros(3), "addr": np.array([1, 2, 3]), "op": np.ones(3)},
        meta=TraceMeta(clock="instructions"))
    with pytest.raises(InputError, match="instruction 0 has more than 2 stores"):
        export_trace(crowded, tmp_path / "t.champsim", "champsim")
    backwards = write_trace(tmp_path / "b.arrow", {
        "time": np.array([5, 2]), "addr": np.array([1, 2]), "op": np.zeros(2)},
        meta=TraceMeta(clock="instructions"))
    with pytest.raises(InputError, match="instruction counts go backwards"):
        export_trace(backwards, tmp_path / "b.champsim", "champsim")
    assert not (tmp_path / "t.champsim").exists() and not (tmp_path / "b.champsim").exists()


def test_export_to_a_read_only_format(tmp_path):
    src = write_trace(tmp_path / "t.arrow", {"addr": np.array([1]), "op": np.array([0])})
    with pytest.raises(InputError, match="^--to: cxlsim reads pin but does not write it; it "
                                         "writes native, csv, ramulator, champsim$"):
        export_trace(src, tmp_path / "t.out", "pin")
