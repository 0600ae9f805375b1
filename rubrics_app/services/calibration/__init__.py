"""Calibration (§5): the run that judges a revision's admission rows, what it judges, where its verdicts are
stored, and the oracle's
mutants. Callers import the modules directly: this package exports nothing of its own."""
