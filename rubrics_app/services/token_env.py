"""Which variable of the worker's environment may name a GitHub token, for drafting and for the remote."""

from __future__ import annotations

import re

# Only these names: a maintainer choosing the variable must not be able to send another secret of the
# worker (an API key) to GitHub or to a remote.
TOKEN_ENV_RE = re.compile(r"GITHUB_TOKEN(_[A-Z0-9_]{1,60})?")
