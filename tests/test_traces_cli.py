"""``cxlsim trace``: gen, info, convert and list from the command line, and its errors."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from cxlsim.cli import main
from cxlsim.traces.formats import FORMATS
from cxlsim.traces.generators import KINDS
from cxlsim.traces.native import open_trace

SAMPLES = REPO / "traces" / "samples"


def test_gen_then_info(tmp_path, capsys):
    out = tmp_path / "z.arrow"
    assert main(["trace", "gen", "zipfian", "--n", "1e4", "--seed", "7", "--param",
                 "footprint=4 MiB", "--param", "read_ratio=0.75", str(out)]) == 0
    assert capsys.readouterr().err == f"wrote {out}: 10,000 records of zipfian\n"
    assert main(["trace", "info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "records     10,000\n" in text
    assert "clock       ns: 0 ns .. 99.99 us\n" in text
    hottest = next(line for line in text.splitlines() if line.startswith("hottest"))
    assert [part.split(" of pages")[0] for part in hottest[12:].split(", ")] == [
        "1 %", "5 %", "10 %", "20 %", "50 %"]
    assert "accesses per page    pages" in text
    assert main(["trace", "info", str(out), "--json", "--page-size", "2 MiB"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == 10000 and summary["pages"] == 2
    assert summary["reads"] + summary["writes"] == 10000


def test_convert_import_and_export(tmp_path, capsys):
    native, csv, ram = tmp_path / "l.arrow", tmp_path / "l.csv", tmp_path / "l.trace"
    assert main(["trace", "convert", str(SAMPLES / "lackey.txt"), str(native),
                 "--from", "lackey"]) == 0
    assert capsys.readouterr().err == f"wrote {native}: 7 records from 19 lines of lackey\n"
    assert main(["trace", "convert", str(native), str(csv), "--from", "native",
                 "--to", "csv"]) == 0
    assert csv.read_text().splitlines()[:3] == ["# clock: instructions",
                                                "time,addr,op,size,thread",
                                                "1,0x1ffefffd88,W,8,0"]
    assert main(["trace", "convert", str(csv), str(ram), "--from", "csv",
                 "--to", "ramulator"]) == 0
    assert ram.read_text().splitlines()[:2] == ["0x1ffefffd88 W", "0x404028 R"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.arrow", "l.csv", "l.trace"]


def test_convert_with_options(tmp_path):
    out = tmp_path / "p.arrow"
    assert main(["trace", "convert", str(SAMPLES / "perf-mem.txt"), str(out), "--from",
                 "perf-mem", "--option", "period=5003"]) == 0
    assert open_trace(out).read(["weight"])["weight"].tolist() == [5003] * 5


def test_bad_line_fails_cleanly(tmp_path, capsys):
    src = tmp_path / "bad.txt"
    src.write_text("0x10 R\n0x20 Q\n")
    assert main(["trace", "convert", str(src), str(tmp_path / "o.arrow"),
                 "--from", "ramulator"]) == 2
    assert capsys.readouterr().err == (
        f"cxlsim: error: {src}:2: expected a Ramulator memory trace line 'ADDR R|W' or "
        "'LD|ST ADDR' (hex address); found '0x20 Q'\n")
    assert [p.name for p in tmp_path.iterdir()] == ["bad.txt"]


def test_skip_bad_reports(tmp_path, capsys):
    src = tmp_path / "bad.txt"
    src.write_text("0x10 R\n0x20 Q\n0x30 W\nnope\n")
    assert main(["trace", "convert", str(src), str(tmp_path / "o.arrow"), "--from",
                 "ramulator", "--skip-bad"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"wrote {tmp_path / 'o.arrow'}: 2 records from 4 lines of ramulator"
    assert err[1].startswith(f"skipped 2 bad; the first: {src}:2: expected a Ramulator")


@pytest.mark.parametrize("argv, message", [
    (["trace", "convert", "a", "b", "--from", "native"],
     "--to: IN and OUT are both native: nothing to convert"),
    (["trace", "convert", "nope.txt", "b.arrow", "--from", "pin"],
     "nope.txt: cannot open: No such file or directory"),
    (["trace", "info", "nope.arrow"], "nope.arrow: no such file"),
    (["trace", "info", "x.arrow", "--page-size", "4K"],
     "--page-size: expected a size such as '64 B', '8 GiB' or '8 GB'; found '4K' (ambiguous "
     "unit 'K': write 'KB' for 10^3 steps or 'KiB' for 2^10 steps)"),
    (["trace", "gen", "kv", "--n", "10", "--param", "workload=G", "o.arrow"],
     "--param workload=G: expected one of A, B, C, D, E, F; found 'G'"),
    (["trace", "info", "x.arrow", "--page-size", "3KB"],
     "--page-size: expected a power of two of at least 64 B, such as 4 KiB or 2 MiB; "
     "found '3KB'"),
    (["trace", "gen", "uniform", "--n", "10", "o.csv"],
     "o.csv: a native trace is an Arrow file: name it *.arrow (for another format, convert "
     "it: cxlsim trace convert IN.arrow OUT --from native --to FORMAT)"),
    (["trace", "convert", "in.csv", "o.txt", "--from", "csv"],
     "o.txt: a native trace is an Arrow file: name it *.arrow (for another format, convert "
     "it: cxlsim trace convert IN.arrow OUT --from native --to FORMAT)"),
])
def test_errors_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert capsys.readouterr().err == f"cxlsim: error: {message}\n"


@pytest.mark.parametrize("argv, message", [
    (["--n", "ten"], "argument --n: expected a whole number of records; found 'ten'"),
    (["--n", "10", "--seed", "-1"], "argument --seed: expected a whole number 0 or more; "
                                    "found '-1'"),
    (["--n", "10", "--seed", "1.5"], "argument --seed: expected a whole number 0 or more; "
                                     "found '1.5'"),
])
def test_bad_gen_arguments(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(["trace", "gen", "uniform", *argv, "o.arrow"])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_an_existing_output_is_kept_unless_forced(tmp_path, capsys):
    out = tmp_path / "t.arrow"
    out.write_text("my notes")
    assert main(["trace", "gen", "uniform", "--n", "10", str(out)]) == 2
    assert capsys.readouterr().err == (f"cxlsim: error: {out}: exists; cxlsim does not replace "
                                       "a file unless --force is given\n")
    assert out.read_text() == "my notes"
    csv = tmp_path / "t.csv"
    csv.write_text("keep")
    assert main(["trace", "convert", str(out), str(csv), "--from", "native", "--to", "csv"]) == 2
    assert csv.read_text() == "keep"
    assert main(["trace", "gen", "uniform", "--n", "10", str(out), "--force"]) == 0
    assert open_trace(out).count == 10


@pytest.mark.parametrize("line, message", [
    ("1,0x2000,X,64,0", "expected op to be R or W (it is 'X')"),
    ("1,0x2000,R,64", "expected 5 comma-separated values (time,addr,op,size,thread), not 4"),
    ("1,0x2000,R,6z4,0", "expected size to be a whole number from 0 to 4,294,967,295, "
                         "decimal or 0x-hex (it is '6z4')"),
    ("1,0x2000,R,64,-1", "expected thread to be a whole number from 0 to 4,294,967,295, "
                         "decimal or 0x-hex (it is '-1')"),
])
def test_a_bad_csv_line_says_which_value_is_wrong(tmp_path, capsys, line, message):
    src = tmp_path / "in.csv"
    src.write_text(f"time,addr,op,size,thread\n0,0x1000,R,64,0\n{line}\n")
    assert main(["trace", "convert", str(src), str(tmp_path / "o.arrow"), "--from", "csv"]) == 2
    assert capsys.readouterr().err == f"cxlsim: error: {src}:3: {message}; found {line!r}\n"


def test_list_names_every_format_and_generator(capsys):
    assert main(["trace", "list"]) == 0
    out = capsys.readouterr().out
    for name in [*FORMATS, *KINDS]:
        assert f"\n  {name} " in out
    assert "theta=0.99" in out and "period=1" in out


def test_readme_documents_every_format_generator_and_parameter():
    readme = (REPO / "traces" / "README.md").read_text()
    for name, fmt in FORMATS.items():
        assert f"`{name}`" in readme, name
        for key, param in fmt.options.items():
            assert f"`{key}={param.default}`" in readme, (name, key)
    for name, kind in KINDS.items():
        assert f"`{name}`" in readme, name
        for key in kind.params:
            assert f"`{key}" in readme, (name, key)
