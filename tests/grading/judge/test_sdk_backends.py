"""What the two SDK backends (anthropic, openai) do alike over HTTP: retries of a storm or a slow reply, a
client error not retried, a refusal flagged. Each test runs against both, with the real SDK talking to the
local fake provider server."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from grading.judge.backend import Backend, BackendError
from tests.grading.judge.backend_helpers import (
    ANTHROPIC_MODEL,
    OPENAI_MODEL,
    anthropic_backend,
    complete,
    openai_backend,
)
from tests.grading.judge.fake_servers import (
    FakeProviderServer,
    error,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
    refusal,
    slow,
    storm,
)


@dataclass(frozen=True)
class Sdk:
    make: Callable[..., Backend]
    model: str
    overloaded: int  # the status the provider answers when it is overloaded


ANTHROPIC = Sdk(anthropic_backend, ANTHROPIC_MODEL, 529)
OPENAI = Sdk(openai_backend, OPENAI_MODEL, 429)


@pytest.fixture(params=[ANTHROPIC, OPENAI], ids=["anthropic", "openai"])
def sdk(request: pytest.FixtureRequest) -> Sdk:
    return request.param  # type: ignore[no-any-return]


def test_a_refusal_is_flagged_with_no_text(sdk: Sdk, fake_server: FakeProviderServer) -> None:
    fake_server.script(refusal())
    reply = complete(sdk.make(fake_server))
    assert reply.refused is True and reply.text is None and reply.stop_reason == "refusal"
    assert reply.model_id == sdk.model


@pytest.mark.parametrize(
    ("sdk", "status"),
    [(ANTHROPIC, 429), (ANTHROPIC, 529), (ANTHROPIC, 500), (OPENAI, 429), (OPENAI, 500), (OPENAI, 503)],
    ids=["anthropic-429", "anthropic-529", "anthropic-500", "openai-429", "openai-500", "openai-503"],
)
def test_a_storm_is_retried_by_the_sdk_then_succeeds(
    sdk: Sdk, status: int, fake_server: FakeProviderServer
) -> None:
    fake_server.script(storm(status, 3))
    reply = complete(sdk.make(fake_server, max_retries=3))
    assert reply.text is not None
    calls = fake_server.model_calls()
    assert len(calls) == 4
    assert [c.headers.get("x-stainless-retry-count") for c in calls] == ["0", "1", "2", "3"]


def test_an_exhausted_storm_raises_backend_error(sdk: Sdk, fake_server: FakeProviderServer) -> None:
    fake_server.script(storm(sdk.overloaded, 10))
    with pytest.raises(BackendError, match=f"HTTP {sdk.overloaded} after 2 retries"):
        complete(sdk.make(fake_server, max_retries=2))
    assert len(fake_server.model_calls()) == 3


def test_a_client_error_is_not_retried(sdk: Sdk, fake_server: FakeProviderServer) -> None:
    fake_server.script(error(400))
    with pytest.raises(BackendError, match="HTTP 400"):
        complete(sdk.make(fake_server))
    assert len(fake_server.model_calls()) == 1


def test_a_slow_reply_times_out_and_is_retried(sdk: Sdk, fake_server: FakeProviderServer) -> None:
    fake_server.script(slow(3.0))
    reply = complete(sdk.make(fake_server, timeout=0.3, max_retries=1))
    assert reply.text is not None
    assert len(fake_server.model_calls()) == 2


def test_timeouts_that_outlast_the_retries_raise_backend_error(
    sdk: Sdk, fake_server: FakeProviderServer
) -> None:
    fake_server.script(slow(3.0), slow(3.0))
    with pytest.raises(BackendError, match="timed out after 1 retries"):
        complete(sdk.make(fake_server, timeout=0.3, max_retries=1))
    assert len(fake_server.model_calls()) == 2
