"""The report page: the report computed from the database's sums, cached, and what the page shows beside it.
Callers import the modules directly: this package exports nothing of its own."""
