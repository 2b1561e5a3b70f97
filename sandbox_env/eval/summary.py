"""summary.json: per-agent, per-task, per-difficulty, per-family and per-split statistics of an
eval directory."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from .. import __version__
from .records import (
    EPISODES_FILE,
    OUTCOME_CLASSES,
    RUNS_FILE,
    SUMMARY_FILE,
    EpisodeRecord,
    RunInfo,
    latest,
    read_records,
    read_runs,
)
from .stats import MeanCI, RateCI, mean, mean_ci, median, paired_difference_ci, wilson

DIFFICULTIES = ("easy", "medium", "hard")
METHODS = {
    "success_rate_ci": "Wilson score interval, 95%",
    "mean_score_ci": "Student t interval on the mean (mean ± t(0.975, n-1)·s/√n), 95%, clipped to [0, 1]",
    "exclusions": "infra_error and env_error episodes are counted but excluded from every score, rate "
                  "and step statistic; agent_error episodes are scored as failures",
    "identity": "an episode is (agent label, task, seed); the newest record of an identity counts",
    "steps_to_solve": "environment steps of verified episodes",
    "paired_difference": "for two agents, the episodes both played (same task and seed, both scored): "
                         "mean of the per-episode differences (first - second) in score and in success "
                         "(1/0), Student t interval on the differences, 95%",
}


class PhaseTimes(BaseModel):
    """Mean seconds per phase over the scored episodes."""

    reset_s: float | None = None
    agent_s: float | None = None
    env_s: float | None = None
    verification_s: float | None = None
    total_s: float | None = None
    by_action: dict[str, float] = Field(default_factory=dict)


class GroupStats(BaseModel):
    """Statistics of one group of episodes (all of an agent, one task, one difficulty)."""

    n: int = Field(description="episodes (newest record per identity), excluded ones included")
    n_scored: int
    n_infra_excluded: int
    n_env_error_excluded: int
    n_unsure_excluded: int = 0  # the mock could not tell whether the fix works: not scored
    n_agent_error: int
    success: RateCI
    score: MeanCI
    steps_mean: float | None
    steps_median: float | None
    steps_to_solve_mean: float | None
    steps_to_solve_median: float | None
    wall_time_mean_s: float | None
    wall_time_median_s: float | None
    wall_time_total_s: float
    phases: PhaseTimes
    outcomes: dict[str, int] = Field(description="outcome class counts over all n episodes")
    verdict_outcomes: dict[str, int] = Field(default_factory=dict)


class ReplaySummary(BaseModel):
    checked: int
    mismatches: int
    mismatched: list[str] = Field(default_factory=list)


class AgentSummary(BaseModel):
    label: str
    model: str | None
    modes: list[str]
    tasks: list[str]
    seeds: list[int]
    overall: GroupStats
    per_task: dict[str, GroupStats]
    per_difficulty: dict[str, GroupStats]
    per_family: dict[str, GroupStats] = Field(default_factory=dict, description="variants of a "
                                              "family together (records without a family: their task)")
    per_split: dict[str, GroupStats] = Field(default_factory=dict, description="train / test variants "
                                             "(records of tasks without variants are not in a split)")
    replay: ReplaySummary | None = None


class PairedComparison(BaseModel):
    """Two agents on the same episodes (task and seed, both scored): per-episode differences."""

    first: str
    second: str
    n_pairs: int = Field(description="episodes both agents played and both were scored")
    score_diff: MeanCI = Field(description="mean of first's score - second's, Student t 95% interval")
    success_diff: MeanCI = Field(description="mean of first's success - second's (1/0 each)")
    first_better: int = Field(description="pairs where first scored higher")
    second_better: int
    ties: int


class Summary(BaseModel):
    schema_version: int = 1
    generated_at: str
    directory: str
    package_version: str = __version__
    methods: dict[str, str] = Field(default_factory=lambda: dict(METHODS))
    n_records: int = Field(description="lines of episodes.jsonl, superseded attempts included")
    n_superseded: int = Field(description="records replaced by a newer attempt of the same episode")
    unreadable_lines: list[int] = Field(default_factory=list)
    task_difficulty: dict[str, str] = Field(default_factory=dict)
    task_versions: dict[str, list[str]] = Field(default_factory=dict)
    agents: dict[str, AgentSummary] = Field(default_factory=dict)
    pairs: list[PairedComparison] = Field(default_factory=list, description="every two agents, "
                                          "compared on the episodes both played")
    runs: list[RunInfo] = Field(default_factory=list)
    interrupted: bool = Field(default=False, description="the latest run was interrupted")


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


def group_stats(records: Iterable[EpisodeRecord]) -> GroupStats:
    recs = list(records)
    scored = [r for r in recs if r.scored]
    wins = [r for r in scored if r.success]
    steps = [float(r.steps) for r in scored]
    solve = [float(r.steps) for r in wins]
    walls = [r.timings.total_s for r in scored]
    actions = sorted({a for r in scored for a in r.timings.by_action})
    phases = PhaseTimes(
        reset_s=_r(mean([r.timings.reset_s for r in scored])),
        agent_s=_r(mean([r.timings.agent_s for r in scored])),
        env_s=_r(mean([r.timings.env_s for r in scored])),
        verification_s=_r(mean([r.timings.verification_s for r in scored])),
        total_s=_r(mean(walls)),
        by_action={a: round(mean([r.timings.by_action.get(a, 0.0) for r in scored]) or 0.0, 4)
                   for a in actions},
    )
    outcomes = Counter(r.outcome for r in recs)
    return GroupStats(
        n=len(recs), n_scored=len(scored),
        n_infra_excluded=sum(r.status == "infra_error" for r in recs),
        n_env_error_excluded=sum(r.status == "env_error" for r in recs),
        n_unsure_excluded=sum(r.status == "unsure" for r in recs),
        n_agent_error=sum(r.status == "agent_error" for r in recs),
        success=wilson(len(wins), len(scored)),
        score=mean_ci([r.score if r.score is not None else 0.0 for r in scored]),
        steps_mean=_r(mean(steps)), steps_median=median(steps),
        steps_to_solve_mean=_r(mean(solve)), steps_to_solve_median=median(solve),
        wall_time_mean_s=_r(mean(walls)), wall_time_median_s=_r(median(walls)),
        wall_time_total_s=round(sum(r.timings.total_s for r in recs), 3),
        phases=phases,
        outcomes={k: outcomes[k] for k in OUTCOME_CLASSES if outcomes[k]},
        verdict_outcomes=dict(sorted(Counter(r.verdict_outcome for r in scored
                                             if r.verdict_outcome).items())),
    )


def paired_comparisons(records: Iterable[EpisodeRecord], agents: list[str]) -> list[PairedComparison]:
    """Every two agents (in ``agents`` order) on the episodes both played, both scored."""
    by_agent: dict[str, dict[tuple[str, int], EpisodeRecord]] = {}
    for r in records:
        if r.scored:
            by_agent.setdefault(r.agent, {})[(r.task, r.seed)] = r
    out = []
    for i, a in enumerate(agents):
        for b in agents[i + 1:]:
            mine, theirs = by_agent.get(a, {}), by_agent.get(b, {})
            keys = sorted(mine.keys() & theirs.keys())
            sa = [mine[k].score or 0.0 for k in keys]
            sb = [theirs[k].score or 0.0 for k in keys]
            out.append(PairedComparison(
                first=a, second=b, n_pairs=len(keys), score_diff=paired_difference_ci(sa, sb),
                success_diff=paired_difference_ci([float(mine[k].success) for k in keys],
                                                  [float(theirs[k].success) for k in keys]),
                first_better=sum(x > y for x, y in zip(sa, sb, strict=True)),
                second_better=sum(x < y for x, y in zip(sa, sb, strict=True)),
                ties=sum(x == y for x, y in zip(sa, sb, strict=True))))
    return out


def _order(keys: Iterable[str], preferred: tuple[str, ...] = ()) -> list[str]:
    ks = set(keys)
    return [k for k in preferred if k in ks] + sorted(ks - set(preferred))


def summarize(records: list[EpisodeRecord], runs: list[RunInfo] | None = None, directory: str = "",
              unreadable: list[int] | None = None) -> Summary:
    """The statistics of a directory's records (newest record per episode identity)."""
    newest = list(latest(records).values())
    s = Summary(generated_at=datetime.now(UTC).isoformat(timespec="seconds"), directory=directory,
                n_records=len(records), n_superseded=len(records) - len(newest),
                unreadable_lines=unreadable or [], runs=runs or [],
                interrupted=bool(runs and runs[-1].interrupted))
    for r in newest:
        s.task_difficulty.setdefault(r.task, r.difficulty)
        versions = s.task_versions.setdefault(r.task, [])
        if r.task_version not in versions:
            versions.append(r.task_version)
    for label in _order({r.agent for r in newest}):
        mine = [r for r in newest if r.agent == label]
        models = {r.model for r in mine if r.model}
        replays = [r for r in mine if r.replay is not None]
        s.agents[label] = AgentSummary(
            label=label, model=models.pop() if len(models) == 1 else (", ".join(sorted(models)) or None),
            modes=sorted({r.mode for r in mine}), tasks=_order({r.task for r in mine}),
            seeds=sorted({r.seed for r in mine}),
            overall=group_stats(mine),
            per_task={t: group_stats(r for r in mine if r.task == t) for t in _order({r.task for r in mine})},
            per_difficulty={d: group_stats(r for r in mine if r.difficulty == d)
                            for d in _order({r.difficulty for r in mine}, DIFFICULTIES)},
            per_family={f: group_stats(r for r in mine if (r.family or r.task) == f)
                        for f in _order({r.family or r.task for r in mine})},
            per_split={sp: group_stats(r for r in mine if r.split == sp)
                       for sp in _order({r.split for r in mine if r.split}, ("train", "test"))},
            replay=ReplaySummary(
                checked=len(replays),
                mismatches=sum(not r.replay.matches for r in replays if r.replay),
                mismatched=[f"{r.task} seed={r.seed}" for r in replays if r.replay and not r.replay.matches],
            ) if replays else None,
        )
    s.pairs = paired_comparisons(newest, list(s.agents))
    return s


def load_summary_inputs(out: Path) -> tuple[list[EpisodeRecord], list[RunInfo], list[int]]:
    loaded = read_records(out / EPISODES_FILE)
    return loaded.records, read_runs(out / RUNS_FILE), loaded.bad_lines


def write_summary(out: Path) -> Summary:
    """Recompute summary.json from the directory's files and write it."""
    records, runs, bad = load_summary_inputs(out)
    summary = summarize(records, runs, str(out), bad)
    tmp = out / (SUMMARY_FILE + ".tmp")
    tmp.write_text(summary.model_dump_json(indent=2) + "\n")
    tmp.replace(out / SUMMARY_FILE)
    return summary
