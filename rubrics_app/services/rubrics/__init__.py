"""Rubrics and their review: revisions and their review, re-review, a task's own files, and rubric.json files
imported and exported. Callers import the modules directly: this package exports nothing of its own."""
