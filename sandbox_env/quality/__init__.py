"""Operator tools behind the CLI: certification of tasks and variants, mock fidelity, held-out
scoring, and the doctor that checks an installation."""
