"""The ``cxlsim`` command: run experiments, validate against published targets,
inspect topologies.

User mistakes (:class:`~cxlsim.errors.InputError`) are printed as one line on stderr
with exit status 2 and no traceback; exit 1 means a validation target failed.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import math
import os
import shutil
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from cxlsim import scratch
from cxlsim.errors import InputError, did_you_mean, unknown
from cxlsim.signals import Stopped, stop_cleanly
from cxlsim.traces.cli import add_trace_commands

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # as a shell reports a command that SIGPIPE ended

#: Characters a line of output takes at most when stdout is not a terminal.
WIDTH = 100
#: A table's cells this short never wrap (a quantity, a status).
SHORT = 12


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cxlsim", description="Discrete-event simulator of CXL and tiered memory.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print cxlsim's version, where it is installed, and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run an experiment file and write a run folder")
    run.add_argument("experiment", help="experiment file (.yaml or .toml), or the name of "
                                        "one shipped with cxlsim (e.g. ornl-transfer)")
    _add_set(run)
    run.add_argument("--out", help="run folder (default: runs/NAME, or runs/NAME-2, ... "
                                   "if that exists); replaces only a previous run folder")
    run.add_argument("--json", action="store_true",
                     help="print the experiment, metrics and tables as JSON on stdout")
    run.add_argument("--report", action="store_true", help=(
        "also write report.html in the run folder: metrics, figures and tables, viewable "
        "offline (plotly.js inside: about 5 MB)"))
    run.add_argument("--jobs", type=int, metavar="N",
                     help="worker processes for a sweep (default: sweep.jobs or CPU count)")
    run.add_argument("--executor", default="local", metavar="local|dask://HOST:PORT",
                     help="where sweep points run (dask needs: pip install 'cxlsim[dask]')")
    run.add_argument("--quick", action="store_true", help=(
        "the same study at a coarser scale by the similarity law: fewer records, a "
        "smaller footprint, the same tunables (what it changes is printed; an experiment "
        "the law cannot shrink runs as is); default folder runs/NAME-quick"))
    _add_progress(run)
    run.set_defaults(handler=_cmd_run)

    clean = sub.add_parser("clean", help="remove the older run folders of experiments "
                                         "(only folders cxlsim wrote), keeping the newest")
    clean.add_argument("names", nargs="*", metavar="NAME", help=(
        "experiments whose run folders to clear, NAME-quick for a quick form's (default: "
        "every one in the folder)"))
    clean.add_argument("--keep", type=int, default=1, metavar="N",
                       help="newest run folders to keep of each (default 1; 0: none)")
    clean.add_argument("--runs", default="runs", metavar="DIR",
                       help="the folder holding the run folders (default: runs)")
    clean.add_argument("--dry-run", action="store_true",
                       help="list what would be removed, and remove nothing")
    clean.set_defaults(handler=_cmd_clean)

    resolve = sub.add_parser("resolve", help="print an experiment with presets, topology "
                                             "and --set applied, as YAML")
    resolve.add_argument("experiment",
                         help="experiment file (.yaml or .toml), or a shipped one's name")
    _add_set(resolve)
    resolve.add_argument("--quick", action="store_true",
                         help="its quick form (as run --quick), what it changes on stderr")
    resolve.set_defaults(handler=_cmd_resolve)

    val = sub.add_parser("validate", help="every reproduction target, simulated vs published")
    mode = val.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help=(
        "quick mode, the default: every study at a coarser scale by the similarity law, "
        "the same statuses as full mode"))
    mode.add_argument("--full", action="store_true", help=(
        "full mode: every study at its shipped size (~30 min with --jobs 2)"))
    val.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    val.add_argument("--jobs", type=int, metavar="N", help=(
        "worker processes running the checks side by side (default: CPU count; the rows "
        "are the same)"))
    val.add_argument("--only", metavar="IDS", help=(
        "only these targets: ids or families, comma-separated (e.g. T8 or T1.1,T8.5)"))
    val.add_argument("--page", metavar="FILE", help=(
        "also write the fidelity page (per row: platform, inputs, error) to FILE, e.g. "
        "docs/fidelity.md; replaces only a page cxlsim wrote"))
    _add_progress(val)
    val.set_defaults(handler=_cmd_validate)

    lst = sub.add_parser("list", help="what ships with cxlsim: experiments, topologies, "
                                      "presets, policies, generators, formats, kinds")
    lst.add_argument("category", nargs="?", metavar="CATEGORY", help=(
        "experiments, topologies, presets, policies, generators, formats or kinds: each "
        "name with a line on it (default: every category's names)"))
    lst.add_argument("--json", action="store_true",
                     help="print {category: {name: description}} as JSON")
    lst.set_defaults(handler=_cmd_list)

    kinds = sub.add_parser("kinds", help="list the experiment kinds a file's 'kind:' may name "
                                         "(cxlsim list kinds)")
    kinds.set_defaults(handler=_cmd_list, category="kinds", json=False)

    schema = sub.add_parser("schema", help="the fields of an experiment kind, of 'topology' "
                                           "or of a placement policy's tunables: type and "
                                           "unit, default, meaning")
    schema.add_argument("kind", metavar="KIND", help="an experiment kind, 'topology', or a "
                                                     "placement policy (e.g. tpp)")
    schema.add_argument("--json", action="store_true", help="print the JSON schema instead")
    schema.set_defaults(handler=_cmd_schema)

    topo = sub.add_parser("topology", help="inspect topology files")
    topo_sub = topo.add_subparsers(dest="topology_command", required=True, metavar="ACTION")
    show = topo_sub.add_parser("show", help="print nodes, links and host-to-device routes")
    show.add_argument("file", help="topology file (.yaml or .toml), or the name of one "
                                   "shipped with cxlsim (e.g. switch-pool)")
    _add_set(show)
    show.add_argument("--html", metavar="OUT", help="also write a plotly picture of the graph")
    show.set_defaults(handler=_cmd_topology_show)

    add_trace_commands(sub)
    return parser


def _add_set(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="override a field, e.g. topology.links[0].cxl_penalty=0.75 or "
                             "links[0].width=8 (repeatable)")


def _add_progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, help=(
        "a progress bar on stderr (default: when stderr is a terminal)"))


def _progress(args: argparse.Namespace) -> bool:
    """Whether to draw progress bars: as asked, else when stderr is a terminal."""
    return sys.stderr.isatty() if args.progress is None else args.progress


def _cmd_run(args: argparse.Namespace) -> int:
    from cxlsim.experiments import load_experiment
    from cxlsim.experiments.display import metrics_text
    from cxlsim.experiments.sweep import run_file

    name = load_experiment(args.experiment, args.overrides).name
    out = _run_folder(args.out, f"{name}-quick" if args.quick else name)
    result = run_file(args.experiment, args.overrides, progress=_progress(args),
                      jobs=args.jobs, executor=args.executor, out=out, quick=args.quick,
                      report=args.report)
    if args.json:
        print(result.to_json())
    else:
        print(metrics_text(result.metrics))
        if "points" in result.tables:
            print("\n" + _points(result.tables["points"], result.config.sweep))
    print(f"run folder: {out}", file=sys.stderr)
    return EXIT_OK


def _points(table, sweep) -> str:
    """A sweep's points as a table: the swept values, then the metrics it compares with
    its baseline and draws (every metric if it names none), in display units."""
    from cxlsim.experiments.display import metric_text

    swept = list(table.columns[1:1 + len(sweep.grid)])
    named = [*(sweep.baseline.columns() if sweep.baseline else []), *sweep.heatmaps]
    metrics = list(dict.fromkeys(named)) or [c for c in table.columns[1 + len(swept):]]
    rows = [{c: metric_text(c, v) for c, v in row.items()}
            for row in table[swept + metrics].to_dict(orient="records")]
    return _table(rows, swept + metrics)


def _run_folder(out: str | None, name: str) -> Path:
    """Where ``run`` writes: ``--out`` if safe to (re)place, else a new ``runs/NAME[-N]``.

    An interrupted sweep's staged points (``runs/NAME.points/``) make the default
    folder the one to resume rather than a new one.
    """
    from cxlsim.experiments.output import check_out, is_run_folder, next_free
    from cxlsim.experiments.sweep import stage_dir

    if out is not None:
        path = check_out(out)
        if is_run_folder(path):
            print(f"cxlsim: replacing the previous run folder {path}", file=sys.stderr)
        return path
    base = Path("runs") / name
    return check_out(base if stage_dir(base).is_dir() else next_free(base))


def _cmd_clean(args: argparse.Namespace) -> int:
    """Remove (or with --dry-run list) old run folders, one line each, then the total."""
    from cxlsim.experiments.clean import old_runs, remove
    from cxlsim.units import format_size

    old, kept = old_runs(Path(args.runs), args.names, args.keep)
    verb = "would remove" if args.dry_run else "removed"
    freed = 0
    for folder in old:
        size = folder.size()
        if not args.dry_run:
            remove(folder)
        freed += size
        print(f"{verb} {folder.path} ({format_size(size, digits=3)})")
    for folder in kept:
        print(f"kept {folder.path}")
    print(f"{verb} {len(old)} run folder{'s' * (len(old) != 1)}, "
          f"{format_size(freed, digits=3)}")
    return EXIT_OK


def _cmd_resolve(args: argparse.Namespace) -> int:
    from cxlsim.config import dump_yaml
    from cxlsim.experiments import load_experiment
    from cxlsim.experiments.quick import quick_overrides

    experiment = load_experiment(args.experiment, args.overrides)
    if args.quick:
        experiment = load_experiment(args.experiment, [*args.overrides,
                                                       *quick_overrides(experiment)])
    print(dump_yaml(experiment), end="")
    if hasattr(experiment, "scaled_text"):  # the similarity law's values, as comments
        print(experiment.scaled_text(), end="")
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from cxlsim.validation import ROW_KEYS
    from cxlsim.validation.fidelity import check_page, write_page
    from cxlsim.validation.markdown import summary
    from cxlsim.validation.run import failed, validate

    jobs = args.jobs if args.jobs is not None else os.cpu_count() or 1
    if jobs < 1:
        raise InputError(f"expected --jobs of 1 or more; found {jobs}", location="--jobs")
    only = None if args.only is None else [n.strip() for n in args.only.split(",") if n.strip()]
    if args.page and only is not None:
        raise InputError("the fidelity page holds every row; drop --only to write it",
                         location="--page")
    if args.page:  # refused now, not after the run
        check_page(args.page)
    quick = not args.full
    lines = sys.stderr if args.json else sys.stdout  # a row's line as its check ends

    def finished(row: dict) -> None:
        tqdm.write(_row_line(row), file=lines)
        lines.flush()

    rows = validate(quick=quick, progress=_progress(args), jobs=jobs, only=only,
                    on_row=finished)
    if args.json:
        print(json.dumps([{k: row[k] for k in ROW_KEYS} for row in rows], indent=1))
    else:
        notes = [_wrap(f"{row['id']}: {row['note']}") for row in rows if row["note"]]
        if notes:
            print("\nNotes:\n" + "\n".join(notes))
        print("\n" + _wrap_items(summary(rows).split(", ")))
    if args.page:
        write_page(args.page, rows, quick)
        print(f"wrote {args.page}", file=sys.stderr)
    return EXIT_FAILED if failed(rows) else EXIT_OK


def _row_line(row: dict) -> str:
    """A validation row on one (wrapped) line: id, status, simulated, published."""
    return _wrap(f"{row['id']:<6} {row['status']:<10} {row['simulated'] or '-'} | "
                 f"published {row['published']} ({row['tolerance']})")


def _cmd_list(args: argparse.Namespace) -> int:
    from cxlsim.catalog import CATEGORIES

    if args.category is not None and args.category not in CATEGORIES:
        raise InputError(unknown("category", args.category, CATEGORIES), key="CATEGORY")
    chosen = [args.category] if args.category else list(CATEGORIES)
    listed = {name: CATEGORIES[name].entries() for name in chosen}
    if args.json:
        print(json.dumps(listed, indent=1))
    elif args.category:
        category = CATEGORIES[args.category]
        rows = [{category.noun: name, "description": text}
                for name, text in listed[args.category].items()]
        print(_table(rows, (category.noun, "description")))
        print("\n" + _wrap(f"Use: {category.usage}"))
    else:
        for name, entries in listed.items():
            print(_wrap(f"{name} ({len(entries)}): {', '.join(entries)}"))
            print(_wrap(f"  use: {CATEGORIES[name].usage}") + "\n")
        print(_wrap("Each with a line on it: cxlsim list CATEGORY"))
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    from cxlsim.config.describe import describe_fields, nested_models
    from cxlsim.experiments import experiment_kinds
    from cxlsim.tiered.policies import POLICIES
    from cxlsim.topology import TopologySpec

    policies = {name: policy.Params for name, policy in POLICIES.items()}
    models = {"topology": TopologySpec, **experiment_kinds(), **policies}
    if args.kind not in models:
        raise InputError(f"unknown kind {args.kind!r}; expected 'topology', an experiment "
                         f"kind ({', '.join(sorted(experiment_kinds()))}) or a policy "
                         f"({', '.join(policies)}){did_you_mean(args.kind, models)}",
                         key="KIND")
    model = models[args.kind]
    if args.json:
        print(json.dumps(model.model_json_schema(), indent=1))
        return EXIT_OK
    columns = ("field", "type", "default", "description")
    skip = set() if model is TopologySpec else {TopologySpec, *nested_models(TopologySpec)}
    print(_wrap(f"{args.kind}: {(model.__doc__ or '').strip().splitlines()[0]}") + "\n")
    fields = describe_fields(model)
    print(_table(fields, columns) if fields else "(no fields of its own)")
    for sub in nested_models(model):
        if sub not in skip:
            print("\n" + _wrap(f"{sub.__name__}: {(sub.__doc__ or '').strip().splitlines()[0]}")
                  + "\n")
            print(_table(describe_fields(sub), columns))
    if args.kind in policies:
        how = (f"Set them under policy: {{name: {args.kind}, TUNABLE: value}} or with --set "
               f"policy_params.TUNABLE=value; the defaults are the kernel's. " if fields else "")
        print("\n" + _wrap(how + "The kernel's own settings (kernel:, numa_balancing:, damon:, "
                                 "migration:) are trace-memory's: cxlsim schema trace-memory."))
        return EXIT_OK
    print("\n" + _wrap("A quantity is a number with its unit, quoted on the command line: "
                       "--set 'field=80 ns'." + ("" if model is TopologySpec else
                                                 " The topology's fields: cxlsim schema "
                                                 "topology.")))
    return EXIT_OK


def _cmd_topology_show(args: argparse.Namespace) -> int:
    from cxlsim.topology import load_topology
    from cxlsim.units import format_bandwidth, format_time

    if args.html:
        _check_writable_file(args.html, "--html")
    topo = load_topology(args.file, args.overrides)
    print(_wrap(f"Topology {topo.spec.name}: {topo.spec.description.strip()}") + "\n")
    nodes = [{"node": n.name, "type": n.type,
              "details": ", ".join(f"{k}={v}" for k, v in n.model_dump(
                  mode="json", exclude={"name", "type", "logical_devices"},
                  exclude_defaults=True).items()) + (
                  f", logical_devices={len(n.logical_devices)}"
                  if getattr(n, "logical_devices", None) else "")}
             for n in topo.spec.nodes]
    print(_table(nodes, ("node", "type", "details")) + "\n")
    edges = sorted((edge for _, _, edge in topo.graph.edges(data=True) if not edge["internal"]),
                   key=lambda edge: edge["index"])
    links = []
    for edge in edges:
        link = edge["link"]
        links.append({"#": edge["index"], "name": link.name,
                      "link": f"{link.src} -- {link.dst}", "protocol": link.protocol,
                      "rate": f"{link.transfer_rate / 1e9:g} GT/s", "width": f"x{link.width}",
                      "flit": link.flit or "-",
                      "bandwidth/dir": format_bandwidth(edge["bandwidth"], digits=4),
                      "latency": format_time(edge["latency"], digits=4)})
    named = any(link["name"] for link in links)
    print(_table(links, ("#", *(("name",) if named else ()), "link", "protocol", "rate",
                         "width", "flit", "bandwidth/dir", "latency")))
    print(_wrap("Link # is the N of --set links[N].FIELD=VALUE (topology.links[N] in an "
                "experiment); a link with a name is also links[NAME].") + "\n")
    routes = [{"route": f"{r.host} -> {r.device}", "links": str(r.links),
               "latency": format_time(r.latency, digits=4),
               "bandwidth/dir": format_bandwidth(r.bandwidth, digits=4),
               "path": " > ".join(r.path)} for r in topo.routes]
    print(f"{len(routes)} host->device routes (one-way latency, bottleneck bandwidth):")
    print(_table(routes, ("route", "links", "latency", "bandwidth/dir", "path")))
    _show_pool(topo)
    if args.html:
        from cxlsim.plot.topology import topology_figure

        topology_figure(topo).write_html(args.html)
        print(f"\nwrote {args.html}", file=sys.stderr)
    return EXIT_OK


def _show_pool(topo) -> None:
    """``topology show``'s pooled memory: each logical device, its host and the route's
    latency, then what each host sees as memory (its NUMA nodes)."""
    from cxlsim.units import format_size, format_time

    lds = list(topo.pool.lds.values())
    if not lds:
        return
    latency = {(r.host, r.device): r.latency for r in topo.routes}
    rows = [{"ld": ld.name, "capacity": format_size(ld.capacity),
             "host": host or "(fabric manager)",
             "latency": format_time(latency[host, ld.device], digits=4) if host else "-"}
            for ld in lds for host in [topo.pool.host[ld.name]]]
    print(f"\n{len(lds)} logical devices of pooled memory (one-way latency from the host "
          f"bound):")
    print(_table(rows, ("ld", "capacity", "host", "latency")))
    hosts = [n.name for n in topo.spec.nodes if n.type == "host"]
    print("\nEach host's memory, as its NUMA nodes (a logical device has no CPUs):")
    for host in hosts:
        seen = ", ".join(f"{i} {name} {format_size(size)}{'' if cpus else ' (no CPUs)'}"
                         for i, (name, size, cpus) in enumerate(topo.memory_of(host)))
        print(_wrap(f"{host}: {seen or 'none'}"))


class _Version(argparse.Action):
    """``--version``: cxlsim's version (:func:`cxlsim.resources.version`) and the folder
    its code is imported from."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from cxlsim.resources import version

        print(f"cxlsim {version()} from {Path(__file__).parent} (Python "
              f"{sys.version.split()[0]})")
        parser.exit()


def _check_writable_file(path: str, key: str) -> None:
    """Refuse, before any work, a file path whose folder is missing or not a folder."""
    folder = Path(path).absolute().parent
    if not folder.is_dir():
        raise InputError(f"cannot write {path!r}: folder {str(folder)!r} does not exist",
                          key=key)
    if Path(path).is_dir():
        raise InputError(f"cannot write {path!r}: it is a folder", key=key)


def _width() -> int:
    """Characters per line: the terminal's (or ``COLUMNS``), else :data:`WIDTH`."""
    return shutil.get_terminal_size((WIDTH, 24)).columns


def _wrap(text: str) -> str:
    """``text`` wrapped to :func:`_width`, its further lines indented."""
    return textwrap.fill(text, _width(), subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False)


def _wrap_items(items: Sequence[str]) -> str:
    """``items`` joined by ", " within :func:`_width`, a line breaking only between
    items (a count such as ``3 PASS (idle calibrated)`` stays whole)."""
    lines = [""]
    for item in items:
        joined = f"{lines[-1]}, {item}" if lines[-1] else item
        if len(joined) + 1 > _width() and lines[-1]:
            lines[-1] += ","
            lines.append(item)
        else:
            lines[-1] = joined
    return "\n".join(lines)


def _table(rows: Sequence[dict], columns: Sequence[str]) -> str:
    """A plain-text table within :func:`_width`: columns as wide as their widest cell;
    while too wide, the column narrowed by one is the one that wraps the fewest more
    lines, never below its longest word or :data:`SHORT` cell, and its cells wrap."""
    cells = [[("" if row.get(c) is None else str(row.get(c))) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    floors = [max([len(c)] + [len(r[i]) if len(r[i]) <= SHORT else
                              max(map(len, r[i].split())) for r in cells])
              for i, c in enumerate(columns)]
    room = _width() - 2 * (len(columns) - 1)
    while sum(widths) > room and any(w > f for w, f in zip(widths, floors)):
        def lines_if_narrowed(i: int) -> tuple[int, int]:
            narrowed = [w - (k == i) for k, w in enumerate(widths)]
            return sum(max(math.ceil(len(v) / w) for v, w in zip(r, narrowed))
                       for r in cells), -widths[i]
        widths[min((i for i, (w, f) in enumerate(zip(widths, floors)) if w > f),
                   key=lines_if_narrowed)] -= 1
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)),
             "  ".join("-" * w for w in widths)]
    for r in cells:
        parts = [textwrap.wrap(v, w, break_long_words=False, break_on_hyphens=False) or [""]
                 for v, w in zip(r, widths)]
        lines += ["  ".join((p[k] if k < len(p) else "").ljust(w)
                            for p, w in zip(parts, widths))
                  for k in range(max(map(len, parts)))]
    return "\n".join(line.rstrip() for line in lines)


def _unrecognized(extra: list[str], argv: list[str]) -> str:
    """argparse's words for arguments no command takes, with a hint to quote when they
    follow a ``--set`` value: ``--set key=10 ns`` unquoted is ``key=10`` and a stray
    ``ns``."""
    message = f"unrecognized arguments: {' '.join(extra)}"
    for i, arg in enumerate(argv):
        if arg == "--set" and i + 1 < len(argv):
            at, value = i + 1, argv[i + 1]
        elif arg.startswith("--set="):
            at, value = i, arg.removeprefix("--set=")
        else:
            continue
        rest = list(itertools.takewhile(extra.__contains__, argv[at + 1:]))
        if rest:
            quoted = " ".join([value, *rest]).replace("'", "'\\''")
            return (f"{message}; a --set value with spaces must be quoted: "
                    f"--set '{quoted}'")
    return message


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cxlsim`` console script."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        parser.error(_unrecognized(extra, sys.argv[1:] if argv is None else list(argv)))
    scratch.remove_stale()  # what runs killed by SIGKILL or a power cut left
    try:
        with stop_cleanly():
            return args.handler(args)
    except InputError as exc:
        print(f"cxlsim: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # the reader went away (`cxlsim validate | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # an output path we could not write: disk full, permissions...
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"cxlsim: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("cxlsim: interrupted", file=sys.stderr)
        return 130
    except Stopped as exc:  # SIGTERM, SIGHUP: what this process made is removed at exit
        try:
            print(f"cxlsim: {exc}", file=sys.stderr)
        except OSError:  # the terminal that would show it is gone
            pass
        return exc.code


def console() -> None:
    """The ``cxlsim`` command: :func:`main`, then exit with its status. The process
    ends here, so the interpreter's last garbage collection over every object a run
    made (numba's, pandas', pydantic's) is skipped (``gc.freeze``: 0.2-0.3 s of a
    ``cxlsim validate``); objects are still finalized as the modules go."""
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    console()
