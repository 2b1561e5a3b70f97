"""Research evaluation: parallel episodes, records with provenance, statistics, an HTML report."""

from .policies import (
    Agent,
    AgentError,
    AgentResult,
    EvalConfigError,
    LLMAgent,
    OracleAgent,
    RandomAgent,
    ReplayAgent,
    StepAgent,
    make_agent,
)
from .records import EpisodeKey, EpisodeRecord, read_records
from .runner import EvalConfig, EvalResult, parse_seeds, run_eval
from .summary import Summary, summarize, write_summary

__all__ = [
    "Agent", "AgentError", "AgentResult", "EpisodeKey", "EpisodeRecord", "EvalConfig", "EvalConfigError",
    "EvalResult", "LLMAgent", "OracleAgent", "RandomAgent", "ReplayAgent", "StepAgent", "Summary",
    "make_agent", "parse_seeds", "read_records", "run_eval", "summarize", "write_summary",
]
