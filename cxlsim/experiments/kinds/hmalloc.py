"""``kind: hmalloc`` — HMSDK's hmalloc/hmctl: only the hmalloc'ed area follows hmctl.

The HMSDK example program (skhynix/hmsdk ``hmalloc/test/example.c``) mallocs
``malloc`` bytes and fills them, then hmallocs ``hmalloc`` bytes and fills them. Each
case runs it as ``numactl <numactl> hmctl <hmctl> ./prog``: the process policy comes
from numactl, and hmctl's ``-m NODE`` (bind) or ``-p NODE`` (preferred) is applied to
hmalloc's arena only (hmalloc.c ``mbind``s each extent it maps), so the malloc'ed
memory keeps following the process policy. Without hmctl options the arena is not
bound and follows the process policy too. The result is the exact number of pages of
each region on each node, counted from the process's page placement (SK hynix HMSDK
talk (H. Kim), target T5.7).

Regions are laid out from virtual page 0 in program order (malloc, then hmalloc), which
fixes the interleave phase; the process runs on the CPUs of ``cpu_node``.
"""

from __future__ import annotations

import pandas as pd
import plotly.express as px
from pydantic import Field, model_validator

from cxlsim.config.base import StrictModel
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, register
from cxlsim.mm.mempolicy import MemPolicy, PagePlacement
from cxlsim.mm.numa import Numa, NumaParams
from cxlsim.units import Size


class HmallocCase(StrictModel):
    """One run of the program: numactl's process policy and hmctl's area policy."""

    name: str = Field(description="case name, used in metric names")
    numactl: MemPolicy = Field(MemPolicy(), description="process policy as numactl options: "
                                                       "'' (default), '-m 1', '-p 1', '-i 1,2'")
    hmctl: MemPolicy = Field(MemPolicy(), description="hmalloc area policy as hmctl options: "
                                                     "'-m 2' or '-p 2'; '' to follow the "
                                                     "process policy")

    @model_validator(mode="after")
    def _check(self) -> HmallocCase:
        if self.hmctl.mode not in ("default", "bind", "preferred"):
            raise ValueError(f"hmctl has only -m/--membind and -p/--preferred, "
                             f"got {self.hmctl}")
        return self


@register("hmalloc")
class HmallocExperiment(ExperimentSpec):
    """Pages per node of the malloc'ed and the hmalloc'ed memory, per policy case."""

    kind: str = "hmalloc"
    numa: NumaParams = Field(description="the machine's NUMA nodes")
    cpu_node: int = Field(0, ge=0, description="node whose CPUs run the program")
    malloc: Size = Field(256 * 2**20, ge=1, description="bytes malloc'ed and filled first")
    hmalloc: Size = Field(512 * 2**20, ge=1, description="bytes hmalloc'ed and filled next")
    cases: list[HmallocCase] = Field(min_length=1, description="numactl/hmctl combinations")

    @model_validator(mode="after")
    def _check(self) -> HmallocExperiment:
        numa = Numa(self.numa)
        numa.check_node(self.cpu_node, cpus=True)
        names = [case.name for case in self.cases]
        if len(set(names)) != len(names):
            raise ValueError(f"case names must be distinct, got {names}")
        for case in self.cases:
            for node in case.numactl.nodes + case.hmctl.nodes:
                numa.check_node(node, memory=True)
        return self

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        page = self.numa.page_size
        rows, metrics = [], {}
        for case in self.cases:
            proc = PagePlacement(Numa(self.numa), case.numactl, self.cpu_node)
            regions = [proc.mmap(-(-self.malloc // page), name="malloc"),
                       proc.mmap(-(-self.hmalloc // page), case.hmctl, name="hmalloc")]
            for region in regions:  # memset, in program order
                proc.touch(region)
            for region in regions:
                for node, pages in enumerate(proc.counts(region).tolist()):
                    rows.append({"case": case.name, "numactl": str(case.numactl),
                                 "hmctl": str(case.hmctl), "region": region.name,
                                 "node": node, "pages": pages, "MiB": pages * page / 2**20})
                    if pages:
                        metrics[f"{case.name}.{region.name}.node{node}"] = pages
        table = pd.DataFrame(rows)
        placed = table[table["pages"] > 0].astype({"node": str})

        def figures() -> dict:
            fig = px.bar(placed, x="case", y="MiB", color="node", pattern_shape="region",
                         title="memory per node: malloc'ed vs hmalloc'ed",
                         labels={"MiB": "memory (MiB)"})
            return {"pages per node": fig}

        return RunResult(self.name, self, metrics, {"pages": table}, self.draw(figures))
