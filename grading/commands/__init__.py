"""Subcommands of ``rubric``: argument parsing and printing only; the work lives in grading/ modules."""
