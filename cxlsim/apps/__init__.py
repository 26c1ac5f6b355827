"""Application models: DecEval and the generic chunked pipeline they run on."""

from cxlsim.apps.deceval import FLOWS, DecEval, DecEvalParams
from cxlsim.apps.pipeline import PipelineRun, run_pipeline

__all__ = ["FLOWS", "DecEval", "DecEvalParams", "PipelineRun", "run_pipeline"]
