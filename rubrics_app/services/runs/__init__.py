"""Agent runs: reading, checking and storing them with their grades, the SWE-bench harness's runs, the pages
that list them and the disagreement review queue. Callers import the modules directly: this package exports
nothing of its own."""
