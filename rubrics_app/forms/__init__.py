"""The app's forms, by the pages they serve: rubrics (revisions, items, imports, judges, drafting), agent runs
(uploads, human verdicts, sweeps) and the report. Callers import the modules directly."""
