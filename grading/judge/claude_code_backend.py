"""The ``claude-code:<model>`` judge backend (§4): the same fenced prompt through the Claude Code CLI.

Each call runs ``claude -p`` once, isolated the way §4 names it:

- ``--tools ""`` (no tools), ``--setting-sources ""`` (no user, project or local settings, and with them no
  CLAUDE.md), plus ``--bare`` (no hooks, plugins, auto-memory, keychain reads or background prefetches) and
  ``--disable-slash-commands`` (the diff on stdin is never read as a command);
- ``CLAUDE_CONFIG_DIR`` and ``HOME`` are fresh directories inside a scratch directory made for the call and
  removed after it, and the working directory is a third one there. Before the call every ancestor of the
  scratch directory is checked: one holding a ``CLAUDE.md``, ``CLAUDE.local.md``, ``.claude`` or ``.git``
  is refused, so the cwd is outside every checkout and every CLAUDE.md ancestor chain;
- the environment is built, not inherited: credentials, endpoint and proxy variables are passed
  through (:data:`PASSED_ENV`, :data:`PASSED_ENV_PREFIXES`), everything else (``CLAUDE_CODE_*``,
  ``ANTHROPIC_MODEL``...) is dropped, and ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` turns off
  telemetry, error reporting and the auto-updater;
- the static prompt (instructions, rubric, task) is the system prompt, read from a file in the scratch
  directory; the fenced diff is the user message, on stdin; neither is ever on a command line or in a shell;
- the reply is structured output against the runner's schema (``--json-schema``); the CLI prints its JSON
  events (``--output-format stream-json``): usage comes from the final result (``modelUsage``), the model id
  from the message that carried the answer, as the API reported it.

The CLI is found at ``RUBRIC_CLAUDE_CODE_CLI``, else in the project's ``node_modules/.bin`` (``npm ci`` at the
repository root installs the version ``package-lock.json`` pins), else on ``PATH``. Its version is part of
the rendered request, so of the cache key: a new CLI changes what the model sees (its own system preamble).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grading.errors import InputError
from grading.judge.backend import BackendError, BackendReply, Decoding, JudgeRequest, redact_secrets
from grading.judge.models import Usage

CLI_ENV = "RUBRIC_CLAUDE_CODE_CLI"
NPM_PACKAGE = "@anthropic-ai/claude-code"
INSTALL_HINT = (
    "install it with `npm ci` at the root of the mergeability-grading checkout (the version "
    f"package-lock.json pins, into node_modules/), or `npm install -g {NPM_PACKAGE}`, "
    f"or set {CLI_ENV} to the claude executable"
)

# Placeholders in the rendered request: the scratch directory is new for every call, so the rendered form
# (and with it the cache key) names it by placeholder.
SCRATCH = "{scratch}"
CONFIG_DIR = f"{SCRATCH}/config"
HOME_DIR = f"{SCRATCH}/home"
TMP_DIR = f"{SCRATCH}/tmp"
WORK_DIR = f"{SCRATCH}/cwd"
SYSTEM_PROMPT_FILE = f"{SCRATCH}/system-prompt.md"

# Inherited from the caller: credentials, endpoint, cloud providers, proxies and CA bundles. Nothing else.
PASSED_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "CLOUD_ML_REGION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
)
PASSED_ENV_PREFIXES = ("AWS_",)
# Set for every call, whatever the caller's environment says.
FIXED_ENV = {
    "CLAUDE_CONFIG_DIR": CONFIG_DIR,
    "HOME": HOME_DIR,
    "TMPDIR": TMP_DIR,  # its own temp files (shell snapshots, task output) go with the call, not to /tmp
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
}
# What Claude Code reads from a directory or its ancestors: none may be above the working directory.
CONTEXT_MARKERS = ("CLAUDE.md", "CLAUDE.local.md", ".claude", ".git")

# The tool through which Claude Code returns ``--json-schema`` output.
STRUCTURED_OUTPUT_TOOL = "StructuredOutput"

# Claude Code takes no sampling parameters; effort is the one decoding knob it exposes.
DECODING_FLAGS = {"effort": "--effort"}
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")


class _ModelUsage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    input_tokens: int = Field(0, alias="inputTokens")
    output_tokens: int = Field(0, alias="outputTokens")
    cache_read_tokens: int = Field(0, alias="cacheReadInputTokens")
    cache_write_tokens: int = Field(0, alias="cacheCreationInputTokens")


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    content: list[dict[str, Any]] | str = []


class _Event(BaseModel):
    """One line of ``--output-format stream-json``: the assistant's messages as the API returned them
    (with the model id it reported), then one ``result`` (the ``--output-format json`` object)."""

    model_config = ConfigDict(extra="ignore")

    type: str
    subtype: str | None = None
    message: _Message | None = None
    is_error: bool = False
    result: str | None = None
    stop_reason: str | None = None
    structured_output: Any = None
    model_usage: dict[str, _ModelUsage] = Field(default_factory=dict, alias="modelUsage")


def find_cli() -> Path | None:
    """The claude executable: ``RUBRIC_CLAUDE_CODE_CLI``, else ``node_modules/.bin/claude`` of this
    checkout, else ``claude`` on PATH; None when there is none."""
    configured = os.environ.get(CLI_ENV)
    if configured:
        return Path(configured)
    local = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "claude"
    if local.is_file():
        return local
    found = shutil.which("claude")
    return Path(found) if found else None


@functools.cache
def cli_version(cli: Path) -> str | None:
    """``claude --version`` (``2.1.197``), read once per executable; None when it cannot be run."""
    try:
        out = subprocess.run(
            [str(cli), "--version"], capture_output=True, text=True, timeout=60, check=True, env=_base_env()
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.split()[0] if out.split() else None


def _base_env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if k in PASSED_ENV or any(k.startswith(p) for p in PASSED_ENV_PREFIXES)
    }


def context_above(directory: Path) -> Path | None:
    """The first path above ``directory`` (itself included) that Claude Code would read context from."""
    for folder in (directory, *directory.parents):
        for name in CONTEXT_MARKERS:
            if (folder / name).exists():
                return folder / name
    return None


class ClaudeCodeBackend:
    """Judge through the Claude Code CLI in print mode, one isolated process per call."""

    scripted = False

    def __init__(
        self,
        model: str,
        *,
        decoding: Decoding | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        cli: Path | None = None,
        scratch_root: Path | None = None,
        timeout: float = 600.0,
    ) -> None:
        self.spec = f"claude-code:{model}"
        self.model = model
        self.decoding: Decoding = dict(decoding or {})
        for key in self.decoding:
            if key not in DECODING_FLAGS:
                raise InputError(
                    None,
                    f"{key!r}: a claude-code judge takes only " + ", ".join(DECODING_FLAGS) + " (its CLI "
                    "exposes no sampling parameters)",
                    f"decoding.{key}",
                )
        effort = self.decoding.get("effort")
        if effort is not None and effort not in EFFORT_LEVELS:
            raise InputError(
                None, f"effort {effort!r}: use one of " + ", ".join(EFFORT_LEVELS), "decoding.effort"
            )
        self.base_url = base_url
        self.api_key = api_key
        self.cli = cli
        self.scratch_root = scratch_root
        self.timeout = timeout

    def _cli(self) -> Path | None:
        return self.cli if self.cli is not None else find_cli()

    def render(self, request: JudgeRequest) -> dict[str, Any]:
        """The exact command: argv, the environment it sets, cwd, the files it writes and stdin.

        Paths inside the per-call scratch directory are given as ``{scratch}/...``; the caller's variables
        that are passed through are named in ``env_passed`` (their values are never rendered)."""
        argv = [
            "claude",
            "--print",
            "--bare",
            "--model",
            self.model,
            "--tools",
            "",
            "--setting-sources",
            "",
            "--disable-slash-commands",
            "--no-session-persistence",
            "--system-prompt-file",
            SYSTEM_PROMPT_FILE,
            # stream-json, not json: the json result names the model asked for, while the assistant events
            # carry the id the API reported back, which is the one stored with each verdict.
            "--output-format",
            "stream-json",
            "--verbose",
            "--json-schema",
            json.dumps(request.output_schema, sort_keys=True, separators=(",", ":")),
        ]
        for key, value in self.decoding.items():
            argv += [DECODING_FLAGS[key], str(value)]
        cli = self._cli()
        return {
            "cli": NPM_PACKAGE,
            "cli_version": cli_version(cli) if cli is not None else None,
            "argv": argv,
            "env": dict(FIXED_ENV),
            "env_passed": sorted(PASSED_ENV) + [f"{p}*" for p in PASSED_ENV_PREFIXES],
            "cwd": WORK_DIR,
            "files": {SYSTEM_PROMPT_FILE: _system_prompt(request)},
            "stdin": request.diff_block,
        }

    async def complete(self, request: JudgeRequest) -> BackendReply:
        """Run the CLI once; raise :class:`BackendError` when it is missing, fails or times out."""
        cli = self._cli()
        if cli is None or not cli.is_file():
            where = f" at {cli}" if cli is not None else ""
            raise BackendError(f"claude-code: the Claude Code CLI was not found{where}; {INSTALL_HINT}")
        root = self.scratch_root or Path(tempfile.gettempdir())
        scratch = Path(tempfile.mkdtemp(prefix="rubric-claude-code-", dir=root)).resolve()
        try:
            found = context_above(scratch)
            if found is not None:
                raise BackendError(
                    f"claude-code: the scratch directory {scratch} is below {found}, which Claude Code would "
                    "read; set TMPDIR to a directory outside every checkout and every CLAUDE.md chain"
                )
            rendered = self.render(request)
            argv = [str(cli), *(_fill(a, scratch) for a in rendered["argv"][1:])]
            env = {**_base_env(), **{k: _fill(v, scratch) for k, v in rendered["env"].items()}}
            # Given to the backend: they override the caller's (and are never rendered: the key is secret).
            if self.base_url is not None:
                env["ANTHROPIC_BASE_URL"] = self.base_url
            if self.api_key is not None:
                env["ANTHROPIC_API_KEY"] = self.api_key
            for name in ("config", "home", "tmp", "cwd"):
                (scratch / name).mkdir()
            for path, text in rendered["files"].items():
                Path(_fill(path, scratch)).write_text(text, encoding="utf-8")
            returncode, stdout, stderr = await self._run(argv, env, scratch / "cwd", rendered["stdin"])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return self._reply(returncode, stdout, stderr)

    async def _run(self, argv: list[str], env: dict[str, str], cwd: Path, stdin: str) -> tuple[int, str, str]:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,  # its own process group, so a timeout ends every child
            )
        except OSError as exc:
            raise BackendError(f"claude-code: could not start {argv[0]}: {exc}; {INSTALL_HINT}") from exc
        try:
            out, err = await asyncio.wait_for(
                process.communicate(stdin.encode("utf-8", errors="surrogateescape")), self.timeout
            )
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            raise BackendError(f"claude-code: no answer within {self.timeout:g}s") from None
        finally:
            if process.returncode is None:  # cancelled: never leave the CLI running
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
        assert process.returncode is not None
        return process.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def _reply(self, returncode: int, stdout: str, stderr: str) -> BackendReply:
        events: list[_Event] = []
        for line in stdout.splitlines():
            if line.strip():
                try:
                    events.append(_Event.model_validate_json(line))
                except ValidationError:
                    continue  # not an event (a warning the CLI printed): the result line decides
        result = next((e for e in reversed(events) if e.type == "result"), None)
        if result is None:
            detail = (stderr.strip() or stdout.strip() or "no output").splitlines()[-1][:500]
            raise BackendError(self._redact(f"claude-code: exit {returncode}, no result: {detail}"))
        if returncode != 0 or result.is_error:
            detail = (result.result or stderr.strip() or "").strip()[:500]
            raise BackendError(self._redact(f"claude-code: exit {returncode}, {result.subtype}: {detail}"))
        usage = Usage()
        for entry in result.model_usage.values():
            usage = usage + Usage(
                input_tokens=entry.input_tokens,
                cache_write_tokens=entry.cache_write_tokens,
                cache_read_tokens=entry.cache_read_tokens,
                output_tokens=entry.output_tokens,
            )
        text = None if result.structured_output is None else json.dumps(result.structured_output)
        return BackendReply(
            text=text,
            model_id=_answering_model(events) or self.model,
            stop_reason=result.stop_reason,
            refused=result.stop_reason == "refusal",
            usage=usage,
        )

    def _redact(self, text: str) -> str:
        return redact_secrets(text, self.api_key, env=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"))


def _answering_model(events: list[_Event]) -> str | None:
    """The model id the API reported for the message that gave the structured output (else the last)."""
    reported = [e.message for e in events if e.type == "assistant" and e.message and e.message.model]
    for message in reversed(reported):
        if isinstance(message.content, list) and any(
            block.get("type") == "tool_use" and block.get("name") == STRUCTURED_OUTPUT_TOOL
            for block in message.content
        ):
            return message.model
    return reported[-1].model if reported else None


def _system_prompt(request: JudgeRequest) -> str:
    return "\n\n".join(t for t in (request.instructions, request.rubric_text) if t)


def _fill(value: str, scratch: Path) -> str:
    # Only whole placeholders at the start: a schema or model id that happens to hold the text stays as is.
    return str(scratch) + value[len(SCRATCH) :] if value.startswith(SCRATCH + "/") else value
