"""Business logic that spans several rows, one package per domain: ``rubrics`` (revisions, their review,
import and export), ``calibration``, ``runs`` (agent runs and the review queue), ``sweeps``, ``reports`` and
``drafting``; at this level what they all use (the job protocol, the audit trail, the judges setting, paging,
a grade's derived rows). Callers import the defining modules: docs/architecture.md names each one."""
