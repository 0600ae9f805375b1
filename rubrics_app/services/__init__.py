"""Business logic that spans several rows: revisions and their review, import/export, the audit trail."""
