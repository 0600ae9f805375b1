"""Sweeps (docs/sweeps.md): the job that grades a repository's runs, what it grades and the judges it calls.
Callers import the modules directly: this package exports nothing of its own."""
