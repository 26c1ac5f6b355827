"""Write a run folder: resolved config, metrics, Parquet tables and an HTML report.

Everything is written to a temporary folder beside the target and renamed into place
at the end, so an interrupted or failed run never leaves a half-written folder.
"""

from __future__ import annotations

import json
import shutil
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
