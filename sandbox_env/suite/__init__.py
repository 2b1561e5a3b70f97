"""The task suite: task specs and their registry, seeded variants and their certification
records, the reference fix as actions (the oracle), and recorded traces of real runs."""
