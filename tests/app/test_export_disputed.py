"""A disputed rubric does not leave unnoticed: the revision page shows the dispute, each export asks for a
confirmation naming the disputed blockers, and export_rubrics refuses it without --allow-disputed."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from rubrics_app.access import Actor
from rubrics_app.models import Job, JobKind, RevisionStatus, RubricRevision
from rubrics_app.services.rubrics import rereview
from rubrics_app.services.rubrics.exports import export_revision_to_checkout
from tests.app.conftest import RUBRIC, MakeRevision
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.django_db

REASON = "B1 is disputed: the clamp is what the maintainers wanted after all."


@pytest.fixture
def disputed(make_revision: MakeRevision, maintainer: User) -> RubricRevision:
    admitted = make_revision(RevisionStatus.ADMITTED)
    rereview.open_dispute(admitted.items.get(item_id="B1"), Actor.member(maintainer), REASON)
    return admitted


def url(name: str, revision: RubricRevision) -> str:
    return reverse(f"rubrics:{name}", args=[revision.task.repository_id, revision.pk])


@pytest.fixture
def client(maintainer: User) -> Client:
    client = Client()
    client.force_login(maintainer)
    return client


def test_the_revision_page_shows_the_open_dispute(disputed: RubricRevision, client: Client) -> None:
    page = client.get(url("revision_detail", disputed)).content.decode()
    assert "needs re-review" in page and REASON in page
    assert "Disputed: <code>B1</code>. Each export below asks you to confirm first." in page


@pytest.mark.parametrize(
    ("name", "query", "content_type"),
    [
        ("export_json", "", "application/json"),
        ("export_zip", "", "application/zip"),
        ("export_zip", "?private=1", "application/zip"),
    ],
)
def test_each_download_asks_to_confirm_the_disputed_blockers(
    disputed: RubricRevision, client: Client, name: str, query: str, content_type: str
) -> None:
    asked = client.get(url(name, disputed) + query)
    assert asked.status_code == 409
    page = asked.content.decode()
    assert "<code>B1</code> is disputed" in page and 'name="confirm_disputed"' in page
    assert 'method="get"' in page
    if query:
        assert '<input type="hidden" name="private" value="1">' in page
    confirmed = client.get(
        url(name, disputed) + (query or "?") + ("&" if query else "") + "confirm_disputed=1"
    )
    assert confirmed.status_code == 200 and confirmed["Content-Type"] == content_type
    if name == "export_json":
        assert json.loads(confirmed.content) == RUBRIC


def test_write_to_the_checkout_asks_first_and_keeps_the_branch(
    disputed: RubricRevision, client: Client
) -> None:
    asked = client.post(url("export_checkout", disputed), {"branch": "rubrics/b1"})
    assert asked.status_code == 409
    page = asked.content.decode()
    assert "Write to the checkout: revision 1 is disputed" in page
    assert '<input type="hidden" name="branch" value="rubrics/b1">' in page and 'method="post"' in page
    assert not Job.objects.filter(kind=JobKind.EXPORT_REVISION).exists()
    client.post(url("export_checkout", disputed), {"branch": "rubrics/b1", "confirm_disputed": "1"})
    job = Job.objects.get(kind=JobKind.EXPORT_REVISION)
    assert job.params["branch"] == "rubrics/b1"


def test_the_confirmation_names_each_reason_and_the_branch(disputed: RubricRevision, client: Client) -> None:
    asked = client.post(url("export_checkout", disputed), {"branch": "rubrics/b1"})
    page = " ".join(asked.content.decode().split())
    assert "<code>B1</code>, disputed by maintainer on " in page and REASON in page
    checkout = disputed.task.repository.checkout_path
    assert f"Where it goes: a commit on the new branch rubrics/b1 of the checkout {checkout}." in page
    assert "export-confirm-errors" not in page  # the first ask shows no error
    pull = " ".join(
        client.post(url("export_pull_request", disputed), {"branch": "rubrics/pr"}).content.decode().split()
    )
    assert (
        "Where it goes: branch rubrics/pr, pushed to the repository&#x27;s remote and proposed as a pull "
        "request." in pull
    )
    download = " ".join(client.get(url("export_json", disputed)).content.decode().split())
    assert "Where it goes: rubric.json, downloaded to your computer." in download


@pytest.mark.parametrize("method", ["get", "post"])
def test_an_unticked_confirmation_says_what_is_missing(
    disputed: RubricRevision, client: Client, method: str
) -> None:
    name = "export_json" if method == "get" else "export_checkout"
    unticked = getattr(client, method)(url(name, disputed), {"branch": "rubrics/b1", "asked": "1"})
    assert unticked.status_code == 409
    page = unticked.content.decode()
    assert (
        '<ul class="errors" id="export-confirm-errors"><li>Nothing was exported: tick the box to export '
        "with the disputed blockers named above.</li></ul>"
    ) in page
    assert page.count('name="asked"') == 1  # sent once again, not carried twice
    assert not Job.objects.filter(kind=JobKind.EXPORT_REVISION).exists()


def test_the_activity_line_names_the_branch_and_the_dispute_overridden(
    disputed: RubricRevision, client: Client, maintainer: User
) -> None:
    repo = GitRepo(Path(disputed.task.repository.checkout_path))
    repo.write("README.md", "hello\n")
    repo.commit("base")
    blocker = disputed.items.get(item_id="B2")
    rereview.open_dispute(blocker, Actor.member(maintainer), "<b>not</b> what we <script>meant</script>")
    client.post(url("export_checkout", disputed), {"branch": "rubrics/b1", "confirm_disputed": "1"})
    export_revision_to_checkout(Job.objects.get(kind=JobKind.EXPORT_REVISION).pk)
    client.get(url("export_json", disputed) + "?confirm_disputed=1")
    page = " ".join(client.get(url("revision_detail", disputed)).content.decode().split())
    checkout = Path(disputed.task.repository.checkout_path).resolve()
    overriding = (
        f', overriding the dispute on <code>B1</code>: <q class="dispute-reason">{REASON}</q>; '
        'the dispute on <code>B2</code>: <q class="dispute-reason">&lt;b&gt;not&lt;/b&gt; what we '
        "&lt;script&gt;meant&lt;/script&gt;</q>"
    )
    assert f"exported this revision (branch rubrics/b1 of the checkout {checkout}){overriding}" in page
    assert f"exported this revision (download of rubric.json){overriding}" in page
    assert "<script>meant" not in page


def test_a_dismissed_dispute_exports_without_asking(
    disputed: RubricRevision, client: Client, maintainer: User
) -> None:
    rereview.dismiss_dispute(disputed.disputes.get(), Actor.member(maintainer), "the clamp was wrong")
    assert client.get(url("export_json", disputed)).status_code == 200


def test_export_rubrics_refuses_a_disputed_revision_unless_allowed(
    disputed: RubricRevision, tmp_path: Path
) -> None:
    name = disputed.task.repository.name
    with pytest.raises(CommandError) as refused:
        call_command("export_rubrics", "--repository", name, "--out", str(tmp_path), stdout=io.StringIO())
    assert refused.value.returncode == 2
    assert str(refused.value) == (
        f"{name} fix_fraction_gt1 r1: B1 disputed (needs re-review). "
        "Nothing was written; pass --allow-disputed to export anyway"
    )
    assert not (tmp_path / "tasks").exists()
    out = io.StringIO()
    call_command(
        "export_rubrics", "--repository", name, "--out", str(tmp_path), "--allow-disputed", stdout=out
    )
    assert "exported 1 admitted revision" in out.getvalue()
    assert (tmp_path / "tasks/fix_fraction_gt1/rubric.json").is_file()
