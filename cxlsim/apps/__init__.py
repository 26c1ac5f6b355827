"""Application models: DecEval and the chunked pipeline it runs on; MLC-style loaded
latency, STREAM and server applications on the epoch level; the pointer chase and
sequential read of the EPYC study."""

from cxlsim.apps.deceval import FLOWS, DecEval, DecEvalParams
from cxlsim.apps.pipeline import PipelineRun, run_pipeline

__all__ = ["FLOWS", "DecEval", "DecEvalParams", "PipelineRun", "run_pipeline"]
