"""Write a run folder: resolved config, metrics, Parquet tables and an HTML report.

Everything is written to a temporary folder beside the target and renamed into place
at the end, so an interrupted or failed run never leaves a half-written folder.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from cxlsim.config import dump_yaml
from cxlsim.experiments.result import RunResult
from cxlsim.plot.report import report_html


def write_run_folder(result: RunResult, out: str | Path) -> Path:
    """Write ``result`` to folder ``out`` (replacing an older run there); return it."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        # mkdtemp makes the folder 0700; give the run folder the mode mkdir would
        # (keeping a set-group-ID bit inherited from the parent folder).
        tmp.chmod((tmp.stat().st_mode & stat.S_ISGID) | (0o777 & ~_umask()))
        (tmp / "config.resolved.yaml").write_text(dump_yaml(result.config), encoding="utf-8")
        payload = result.to_json_dict()
        (tmp / "metrics.json").write_text(
            json.dumps({"experiment": payload["experiment"], "metrics": payload["metrics"]},
                       indent=2), encoding="utf-8")
        for name, table in result.tables.items():
            table.to_parquet(tmp / f"{name}.parquet", index=False)
        (tmp / "report.html").write_text(report_html(result), encoding="utf-8")
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            out.rename(old / out.name)
            shutil.rmtree(old)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _umask() -> int:
    """The process umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no other way to read it; restore it at once
    os.umask(mask)
    return mask
