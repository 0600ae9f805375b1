"""The git credential helper of grading.git_push: ``python -I .../grading/git_credential.py get``.

git runs it with the request on stdin (``protocol=https``, ``host=example.com:8443``, ...). It answers only
a ``get`` for exactly the origin named in ``RUBRICS_GIT_CREDENTIAL_ORIGIN`` (``https://host[:port]``), with
the token from ``RUBRICS_GIT_CREDENTIAL_TOKEN``: both variables are in the environment of that one git
process only, so the token is on no command line, in no URL and in no config file. It imports nothing but
the standard library: it runs as a file, in isolated mode, in the checkout. Any other request (a
``store``, an ``erase``, another host) gets no answer and git goes on without a credential.
"""

from __future__ import annotations

import os
import sys

ORIGIN_ENV = "RUBRICS_GIT_CREDENTIAL_ORIGIN"
TOKEN_ENV = "RUBRICS_GIT_CREDENTIAL_TOKEN"
USERNAME = "x-access-token"  # what GitHub expects beside a token; other servers ignore it or accept any
MAX_REQUEST_BYTES = 64 * 1024


def _request(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key not in fields:
            fields[key] = value
    return fields


def answer(action: str, request: str, environ: dict[str, str] | os._Environ[str]) -> str:
    """What the helper prints for ``action`` and the request git sent ("" when it does not answer)."""
    token = environ.get(TOKEN_ENV, "")
    origin = environ.get(ORIGIN_ENV, "")
    if action != "get" or not token or not origin or "\n" in token:
        return ""
    fields = _request(request)
    asked = f"{fields.get('protocol', '')}://{fields.get('host', '')}"
    if asked != origin:
        return ""
    return f"username={USERNAME}\npassword={token}\n"


def main() -> int:
    action = sys.argv[1] if len(sys.argv) > 1 else ""
    request = sys.stdin.buffer.read(MAX_REQUEST_BYTES).decode("utf-8", "replace")
    sys.stdout.write(answer(action, request, os.environ))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
