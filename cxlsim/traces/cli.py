"""The ``cxlsim trace`` commands: ``info``, ``convert``, ``gen`` and ``list``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cxlsim import scratch
from cxlsim.errors import InputError

if TYPE_CHECKING:
    from cxlsim.traces.info import TraceInfo

NATIVE = "native"


def add_trace_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``cxlsim trace ...`` on the top-level subparsers."""
    trace = sub.add_parser("trace", help="native traces: inspect, import and export, generate")
    actions = trace.add_subparsers(dest="trace_command", required=True, metavar="ACTION")

    info = actions.add_parser("info", help="records, footprint, read ratio and per-page "
                                           "access histogram of a native trace")
    info.add_argument("file", help="native trace (.arrow)")
    info.add_argument("--page-size", default="4 KiB", metavar="SIZE",
                      help="page size for the footprint and histogram (default 4 KiB)")
    info.add_argument("--json", action="store_true", help="print the summary as JSON")
    info.set_defaults(handler=_cmd_info)

    convert = actions.add_parser(
        "convert", help="import a tool's trace into the native format, or export one",
        description="Convert IN (in the --from format) to OUT (in the --to format, native by "
                    "default). Formats: see 'cxlsim trace list'.")
    convert.add_argument("input", metavar="IN")
    convert.add_argument("output", metavar="OUT")
    convert.add_argument("--from", dest="source", required=True, metavar="FORMAT",
                         help="format of IN: native or a tool's format")
    convert.add_argument("--to", dest="target", default=NATIVE, metavar="FORMAT",
                         help="format of OUT (default native)")
    convert.add_argument("--option", dest="options", action="append", default=[],
                         metavar="KEY=VALUE", help="format option, e.g. period=5003 "
                                                   "(repeatable)")
    convert.add_argument("--skip-bad", action="store_true",
                         help="skip malformed lines or records, count and report them")
    _add_force(convert)
    convert.set_defaults(handler=_cmd_convert)

    gen = actions.add_parser("gen", help="write a seeded synthetic trace",
                             description="Write N records of generator KIND to OUT. "
                                         "Generators and parameters: 'cxlsim trace list'.")
    gen.add_argument("kind", metavar="KIND")
    gen.add_argument("--n", required=True, type=_count, metavar="N",
                     help="number of records, e.g. 1000000 or 1e6")
    gen.add_argument("--seed", type=_seed, default=0, metavar="S",
                     help="seed, a whole number 0 or more (default 0)")
    gen.add_argument("--param", dest="params", action="append", default=[],
                     metavar="KEY=VALUE", help="generator parameter, e.g. theta=0.9 "
                                               "(repeatable)")
    gen.add_argument("out", metavar="OUT", help="native trace to write (.arrow)")
    _add_force(gen)
    gen.set_defaults(handler=_cmd_gen)

    lst = actions.add_parser("list", help="formats and generators with their parameters")
    lst.set_defaults(handler=_cmd_list)


def _add_force(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--force", action="store_true",
                        help="replace OUT if it exists (by default an existing file is kept)")


def _seed(text: str) -> int:
    """A seed: a whole number, 0 or more (numpy's seeding takes no negatives)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number 0 or more; found {text!r}")
    return value


def _new_output(out: str, force: bool, native: bool) -> None:
    """Refuse, before any work, to overwrite a file unasked or to give a native
    trace another format's name."""
    if native and Path(out).suffix.lower() != ".arrow":
        raise InputError("a native trace is an Arrow file: name it *.arrow (for another "
                         "format, convert it: cxlsim trace convert IN.arrow OUT --from native "
                         "--to FORMAT)", location=out)
    if Path(out).exists() and not force:
        raise InputError("exists; cxlsim does not replace a file unless --force is given",
                         location=out)


def _count(text: str) -> int:
    """A record count: a whole number, also written 1e6 or 1_000_000."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value.is_integer() or value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of records; found {text!r}")
    return int(value)


def _cmd_info(args: argparse.Namespace) -> int:
    from cxlsim.traces.info import trace_info
    from cxlsim.units import UnitError, parse_size

    try:
        page = parse_size(args.page_size)
    except UnitError as exc:
        raise InputError(str(exc), location="--page-size") from None
    if page < 64 or page & (page - 1):
        raise InputError(f"expected a power of two of at least 64 B, such as 4 KiB or 2 MiB; "
                         f"found {args.page_size!r}", location="--page-size")
    info = trace_info(args.file, page)
    if args.json:
        print(json.dumps(info.to_dict(), indent=1))
    else:
        print(_info_text(info))
    return 0


def _info_text(info: TraceInfo) -> str:
    from cxlsim.units import format_percent, format_size, format_time

    def percent(fraction: float) -> str:
        return format_percent(fraction, digits=3)

    def span(t: int | None) -> str:
        if t is None:
            return "-"
        return format_time(float(t), digits=4) if info.clock == "ns" else f"{t:,}"

    lines = [("trace", f"{info.path}" + (f"  ({info.source})" if info.source else "")),
             ("records", f"{info.records:,}"),
             ("clock", f"{info.clock}: {span(info.first_time)} .. {span(info.last_time)}")]
    if info.records:
        lines.append(("operations", f"{percent(info.reads / info.records)} reads "
                                    f"({info.reads:,} reads, {info.writes:,} writes)"))
        if info.accesses != info.records:
            lines.append(("accesses", f"{info.accesses:,} (records weighted by sample "
                                      "period or nr_accesses)"))
        lines += [("threads", f"{info.threads:,}"),
                  ("addresses", f"0x{info.lowest_addr:x} .. 0x{info.highest_addr:x}"),
                  ("footprint", f"{format_size(info.footprint, digits=4)} in {info.pages:,} "
                                f"pages of {format_size(info.page_size)}")]
    for title, counts in (("page types", info.page_types), ("regions", info.regions)):
        if counts:
            lines.append((title, ", ".join(f"{name} {n:,} ({percent(n / info.records)})"
                                           for name, n in counts.items())))
    if info.per_page:
        stats = info.per_page
        lines.append(("per page", f"mean {stats['mean']:.3g}, min {stats['min']:,}, median "
                                  f"{stats['median']:,}, p90 {stats['p90']:,}, p99 "
                                  f"{stats['p99']:,}, max {stats['max']:,} accesses"))
        lines.append(("hottest", ", ".join(f"{share} of pages hold {percent(held)}"
                                           for share, held in info.hottest.items())
                      + " of accesses"))
    width = max(len(title) for title, _ in lines)
    text = [f"{title:<{width}}  {value}" for title, value in lines]
    if info.histogram:
        text.append("\naccesses per page    pages")
        most = max(n for _, _, n in info.histogram)
        for low, high, n in info.histogram:
            label = f"{low:,}" if low == high else f"{low:,}-{high:,}"
            text.append(f"{label:>17}  {n:>10,}  {'#' * max(1, round(40 * n / most))}")
    return "\n".join(text)


def _cmd_convert(args: argparse.Namespace) -> int:
    from cxlsim.traces.formats import export_trace, import_trace

    if args.source == NATIVE and args.target == NATIVE:
        raise InputError("IN and OUT are both native: nothing to convert", location="--to")
    _new_output(args.output, args.force, native=args.target == NATIVE)
    if args.target == NATIVE:
        report = import_trace(args.input, args.output, args.source, args.options,
                              args.skip_bad)
        print(f"wrote {args.output}: {report.records:,} records from {report.lines:,} "
              f"{'records' if args.source == 'champsim' else 'lines'} of {args.source}",
              file=sys.stderr)
        if report.skipped:
            print(f"skipped {report.skipped:,} bad; the first: {report.first_bad}",
                  file=sys.stderr)
        return 0
    if args.source == NATIVE:
        export_trace(args.input, args.output, args.target, args.options)
    else:  # tool -> native (in a folder of the temporary folder) -> tool
        if not Path(args.output).parent.is_dir():
            raise InputError("cannot write: the folder does not exist", location=args.output)
        with scratch.temporary("cxlsim-convert-") as tmp:
            native = tmp / "trace.arrow"
            import_trace(args.input, native, args.source, args.options, args.skip_bad)
            export_trace(native, args.output, args.target)
    print(f"wrote {args.output} ({args.target})", file=sys.stderr)
    return 0


def _cmd_gen(args: argparse.Namespace) -> int:
    from cxlsim.traces.generators import generate

    _new_output(args.out, args.force, native=True)
    generate(args.kind, args.n, args.seed, args.out, args.params)
    print(f"wrote {args.out}: {args.n:,} records of {args.kind}", file=sys.stderr)
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from cxlsim.traces.formats import FORMATS, described
    from cxlsim.traces.generators import KINDS
    from cxlsim.traces.generators.base import TIMING

    def params(specs: dict, skip: dict | None = None) -> None:
        for key, param in specs.items():
            if not skip or skip.get(key) is not param:
                print(f"      {key + '=' + param.default:<26} {param.doc}")

    print("Formats (cxlsim trace convert IN OUT --from FORMAT [--to FORMAT] [--option K=V]):")
    for name, text in described().items():  # native first
        fmt = FORMATS.get(name)
        print(f"  {name:<14} {text}" + (f"; holds {', '.join(fmt.fields)}" if fmt else ""))
        params(dict(fmt.options) if fmt else {})
    print("\nGenerators (cxlsim trace gen KIND --n N --seed S [--param K=V] OUT); all take:")
    params(TIMING)
    for name, kind in KINDS.items():
        print(f"  {name:<14} {kind.doc}")
        params(dict(kind.params), skip=TIMING)
    return 0
