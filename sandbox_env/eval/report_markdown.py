"""The report as Markdown (report.md): the same sections and tables as the HTML page, plots linked."""

from __future__ import annotations

from .report_tables import PLOTS_DIR, SECTIONS, Row, Table, meta_lines, pair_note, replay_lines
from .summary import Summary


def md_table(head: Row, rows: list[Row], link_col: int | None = None) -> str:
    def cell(i: int, c: str) -> str:
        c = c.replace("|", "\\|")
        return f"[view]({c})" if i == link_col else c

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(i, c) for i, c in enumerate(r)) + " |" for r in rows]
    return "\n".join(lines)


def report_markdown(s: Summary, title: str, tables: dict[str, Table], figures: list[str],
                    notice: str = "") -> str:
    sec = dict(SECTIONS)
    fig = {n: f"![{n}]({PLOTS_DIR}/{n}.png)" for n in figures}
    parts = [f"# {title}", "", *([f"> **{notice}**", ""] if notice else []),
             *[f"{x}  " for x in meta_lines(s)], "",
             f"## {sec['overview']}", "", md_table(*tables["overview"]), ""]
    parts += [f"Replay: {x}" for x in replay_lines(s)]
    parts += [f"## {sec['pairs']}", "", pair_note(s), "",
              *([fig["paired_differences"], ""] if s.pairs else []), md_table(*tables["pairs"]), ""]
    parts += [f"## {sec['success-task']}", "", fig["success_per_task"], "", md_table(*tables["task"]), "",
              f"## {sec['success-difficulty']}", "", fig["success_per_difficulty"], "",
              md_table(*tables["difficulty"]), "",
              f"## {sec['success-variants']}", "", md_table(*tables["family"]), "",
              md_table(*tables["split"]), "",
              f"## {sec['scores']}", "", fig["score_distribution"], "",
              f"## {sec['steps']}", "", fig["steps_to_solve"], "",
              f"## {sec['time']}", "", fig["time_per_phase"], "", md_table(*tables["phases"]), "",
              f"## {sec['outcomes']}", "", fig["outcome_breakdown"], "", md_table(*tables["outcomes"]), "",
              f"## {sec['episodes']}", "", md_table(*tables["episodes"], link_col=9), "",
              f"## {sec['provenance']}", "", md_table(*tables["provenance"]), "",
              f"## {sec['methods']}", "", *[f"- **{k}**: {v}" for k, v in s.methods.items()], ""]
    return "\n".join(parts)
