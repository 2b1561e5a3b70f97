"""Trimming text for prompts and log lines: one line within a limit, or the head and tail of a long text."""

from __future__ import annotations


def one_line(text: str, limit: int) -> str:
    """``text`` with its whitespace collapsed to single spaces, cut to ``limit`` characters with '...'."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def truncate_middle(text: str, limit: int) -> str:
    """Keep the head and the tail of ``text`` within ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 5
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n... [{cut} of {len(text)} chars cut] ...\n{text[-tail:]}"
