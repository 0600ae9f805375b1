"""Pushing an exported branch to a repository's remote, with a token given only through a credential helper.

A remote is a GitHub repository named ``OWNER/NAME`` (pushed to ``<github web root>/OWNER/NAME.git``) or a
git URL: ``https://``, ``http://``, ``ssh://``, ``file://``, ``user@host:path`` or an absolute path. A URL
never carries a user or password (the token is not to be written where a URL is shown or logged), and no
other transport (``ext::`` runs a command) is allowed.

The push goes through :class:`grading.git.Git` (the host's config off, nothing the repository configures
runs a command) with these settings besides: only the transports above; HTTP redirects not followed (a
redirect to another host would take the credential with it); the credential helpers of every config level
reset, and one added: ``python -I grading/git_credential.py``, which answers with the token only for the
remote's own origin. The token and that origin are in the environment of the one git process that pushes,
nowhere else: not on its command line, not in its URL, not in a file.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from grading.draft.pr import parse_github_repository
from grading.errors import InputError
from grading.git import NO_COMMANDS_CONFIG, Git, GitError
from grading.git_credential import ORIGIN_ENV, TOKEN_ENV

MAX_REMOTE_CHARS = 500
PUSH_TIMEOUT = 300.0  # seconds for the push of one branch
_SCHEMES = ("https", "http", "ssh", "file")
_SCP_LIKE = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/\\-][^\\]*")
_GITHUB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Remote:
    """Where a branch is pushed: ``url``; ``github`` is OWNER/NAME when the remote is a GitHub repository
    (a pull request can be opened), else None."""

    url: str
    github: str | None = None

    @property
    def token_origin(self) -> str | None:
        """``scheme://host[:port]`` of an http(s) remote, as git names it to a credential helper; None for
        ssh, file and paths (no token is ever given to them)."""
        split = urlsplit(self.url)
        if split.scheme in ("https", "http"):
            return f"{split.scheme}://{split.netloc}"
        return None


def parse_remote(text: str, github_web: str = "https://github.com") -> Remote:
    """A remote as a repository's setting names it; InputError (field ``remote``) for anything else."""
    text = text.strip()
    problem = _remote_problem(text)
    if problem:
        raise InputError(None, f"not a remote: {text[:200]!r} ({problem})", "remote")
    if _GITHUB_NAME.fullmatch(text):
        owner, name = parse_github_repository(text)
        return Remote(f"{github_web.rstrip('/')}/{owner}/{name}.git", f"{owner}/{name}")
    return Remote(text)


def _remote_problem(text: str) -> str | None:
    if not text:
        return "empty"
    if len(text) > MAX_REMOTE_CHARS:
        return f"longer than {MAX_REMOTE_CHARS} characters"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text):
        return "spaces or control characters"
    if text.startswith("-"):
        return "starts with '-'"
    if _GITHUB_NAME.fullmatch(text):
        try:
            parse_github_repository(text)
        except InputError as exc:
            return exc.message
        return None
    if text.startswith("/"):
        return None
    if "://" in text:
        split = urlsplit(text)
        if split.scheme not in _SCHEMES:
            return f"the transport {split.scheme!r} is not one of {', '.join(_SCHEMES)}"
        if split.scheme != "file" and not split.hostname:
            return "no host"
        if split.password is not None or (split.username is not None and split.scheme != "ssh"):
            return "a URL carries no user or password: the token is given through its variable"
        if split.query or split.fragment:
            return "no query or fragment"
        return None
    if "::" in text:
        return "a transport helper (<transport>::<address>) is not allowed"
    if _SCP_LIKE.fullmatch(text):
        return None
    return "OWNER/NAME, an https://, http://, ssh:// or file:// URL, user@host:path or an absolute path"


def push_config() -> tuple[tuple[str, str], ...]:
    # The helper's file by its path, in isolated mode: git runs it in the checkout, and ``-m`` would put
    # the checkout first on sys.path (a checkout with its own grading/ would answer with the token).
    script = Path(__file__).with_name("git_credential.py")
    helper = f"!{shlex.quote(sys.executable)} -I {shlex.quote(str(script))}"
    return (
        *NO_COMMANDS_CONFIG,
        ("protocol.allow", "never"),
        *((f"protocol.{scheme}.allow", "always") for scheme in _SCHEMES),
        ("http.followRedirects", "false"),
        ("core.sshCommand", "ssh -o BatchMode=yes"),
        ("credential.helper", ""),  # every helper configured before this one is dropped
        ("credential.helper", helper),
        ("credential.interactive", "false"),
    )


def push_branch(
    cwd: Path,
    remote: Remote,
    branch: str,
    token: str | None,
    *,
    timeout: float = PUSH_TIMEOUT,
) -> None:
    """Push ``refs/heads/<branch>`` of the repository at ``cwd`` to the same branch of ``remote`` (never
    forced: an existing remote branch that is not an ancestor refuses it). ``token`` is offered only to an
    http(s) remote's own origin. GitError with git's last line when the push fails."""
    ref = f"refs/heads/{branch}"
    env: dict[str, str] = {}
    origin = remote.token_origin
    if token and origin:
        env = {TOKEN_ENV: token, ORIGIN_ENV: origin}
    git = Git(cwd, env, push_config(), timeout=timeout)
    if not branch or branch.startswith("-") or git.code("check-ref-format", ref) != 0:
        raise GitError(cwd, f"bad branch name {branch!r}")
    result = git.result("push", "--porcelain", "--", remote.url, f"{ref}:{ref}")
    if result.returncode != 0:
        raise GitError(cwd, f"git push to {remote.url} failed: {result.last_error_line()}")
