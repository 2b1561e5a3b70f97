"""The run's summary lines."""

from __future__ import annotations


def audit_lines(audit: dict[str, dict[str, float]], band: float) -> list[str]:
    lines = [f"{'region':<8} {'forecast':>9} {'actual':>9} {'ratio':>6}"]
    for region, v in audit.items():
        flag = "" if abs(v["ratio"] - 1.0) <= band else "  <-- outside the band"
        lines.append(f"{region:<8} {v['forecast']:>9.1f} {v['actual']:>9.0f} {v['ratio']:>6.3f}{flag}")
    return lines


def holdout_line(holdout: dict) -> str:
    per_region = ", ".join(f"{r} {w:.3f}" for r, w in holdout["wape"].items())
    return f"holdout: {holdout['rows']} rows, deviance {holdout['deviance']:.4f}, WAPE {per_region}"
