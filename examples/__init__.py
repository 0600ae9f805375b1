"""The example task that ships with the project: a tiny Python repository, a rubric, calibration diffs
and two agent runs. ``examples.build`` turns ``base_repo/`` into a real git repository."""
