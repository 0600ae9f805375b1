"""The diff-only rubric judge (§4): prompt rendering and fencing, backends, runner, cache and cost."""
