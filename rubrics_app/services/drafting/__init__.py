"""Drafting (§6): the job that drafts a task's rubric from its merged PR, and storing what the drafter wrote.
Callers import the modules directly: this package exports nothing of its own."""
