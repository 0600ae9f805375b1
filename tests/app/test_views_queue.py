"""The disagreement review queue: entries, one screen per pair, human verdicts, role rules, disputes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from rubrics_app.models import (
    Dispute,
    HumanVerdict,
    ItemVerdict,
    Repository,
    RevisionStatus,
    RubricRevision,
    RunGrade,
)
from rubrics_app.services.runs import queue as review_queue
from tests.app.client_helpers import logged_in
from tests.app.conftest import MakeRevision
from tests.app.runs_helpers import PASSING, grade, import_graded, write_run, write_scripted, write_task_dir
from tests.grading.judge.fake_servers import (
    FakeProviderServer,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
    point_sdks_at,
    valid,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def graded(tmp_path: Path, repository: Repository, admitted_revision: RubricRevision) -> RubricRevision:
    import_graded(tmp_path, repository, admitted_revision)
    return admitted_revision


def queue_url(repository: Repository, **query: str) -> str:
    url = reverse("rubrics:queue", args=[repository.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def entry_url(repository: Repository, grade: RunGrade, item_id: str, suffix: str = "") -> str:
    name = "rubrics:queue_label" if suffix == "label" else "rubrics:queue_entry"
    return reverse(name, args=[repository.pk, grade.pk, item_id])


def grades() -> list[RunGrade]:
    return list(RunGrade.objects.order_by("run__repetition"))


def test_the_queue_lists_every_pair_where_the_judges_disagree(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    html = logged_in(reviewer).get(queue_url(repository)).content.decode()
    assert "0 of 4 reviewed" in html
    assert html.count("<code>B1</code></a>") == 2 and html.count("<code>N2</code></a>") == 2
    assert "<code>N1</code></a>" not in html  # the judges agree on N1


def test_filters_narrow_the_queue(reviewer: User, repository: Repository, graded: RubricRevision) -> None:
    html = logged_in(reviewer).get(queue_url(repository, item="N2")).content.decode()
    assert "0 of 2 reviewed" in html
    html = logged_in(reviewer).get(queue_url(repository, model="no-such-model")).content.decode()
    assert "0 of 0 reviewed" in html


def test_one_screen_shows_the_criterion_both_verdicts_and_the_cited_lines(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    first = grades()[0]
    html = logged_in(reviewer).get(entry_url(repository, first, "B1") + "?kind=judges").content.decode()
    assert "A fraction above 1 raises ValueError" in html  # the criterion
    assert "Clamping hides the caller" in html  # the rationale
    assert "raises ValueError" in html and "check is missing on the GPU path" in html
    # A judge's reason is data: escaped, never markup.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
    assert html.count('class="diff-add cited cited-primary"') == 1  # new line 2
    assert html.count('class="diff-add cited cited-second"') == 1  # new line 3
    assert "scripted" in html
    assert "pair 1 of 4" in html and 'id="queue-next"' in html and 'id="queue-previous"' not in html
    assert 'data-key="p"' in html and "rubrics/queue.js" in html


def test_a_human_verdict_is_stored_apart_and_moves_to_the_next_pair(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    first, second = grades()
    before = list(RunGrade.objects.values_list("pk", "mergeable", "merge_score", "status"))
    verdicts_before = list(ItemVerdict.objects.values_list("pk", "verdict"))
    response = logged_in(reviewer).post(
        entry_url(repository, first, "B1", "label"),
        {"verdict": "fail", "note": "GPU path missed", "kind": "judges"},
    )
    assert response.status_code == 302
    assert response["Location"] == entry_url(repository, first, "N2") + "?kind=judges"
    human = HumanVerdict.objects.get()
    assert (human.run, human.item_id, human.verdict, human.note, human.by) == (
        first.run,
        "B1",
        "fail",
        "GPU path missed",
        reviewer,
    )
    # Never changes a score or a judge's verdict (§4).
    assert list(RunGrade.objects.values_list("pk", "mergeable", "merge_score", "status")) == before
    assert list(ItemVerdict.objects.values_list("pk", "verdict")) == verdicts_before
    assert "1 of 4 reviewed" in logged_in(reviewer).get(queue_url(repository)).content.decode()
    # Labelling the same pair again replaces the verdict: one row per pair.
    logged_in(reviewer).post(
        entry_url(repository, first, "B1", "label"), {"verdict": "unsure", "kind": "judges"}
    )
    assert HumanVerdict.objects.get().verdict == "unsure"


def test_the_last_pair_goes_back_to_the_queue(
    maintainer: User, repository: Repository, graded: RubricRevision
) -> None:
    first, last = grades()
    client = logged_in(maintainer)
    # The end of the list with pairs still unlabelled: to the first of them, saying how many remain.
    response = client.post(entry_url(repository, last, "N2", "label"), {"verdict": "pass"}, follow=True)
    assert response.redirect_chain[0][0] == entry_url(repository, first, "B1") + "?kind=judges"
    assert "1 of 4 reviewed: the end of the list, with 3 pairs still unlabelled." in response.content.decode()
    for run_grade, item in ((first, "B1"), (first, "N2"), (last, "B1")):
        client.post(entry_url(repository, run_grade, item, "label"), {"verdict": "pass"})
    # Every pair labelled: back to the queue.
    response = client.post(entry_url(repository, last, "N2", "label"), {"verdict": "pass"})
    assert response["Location"] == queue_url(repository) + "?kind=judges"


def test_a_bad_verdict_is_a_form_error(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    response = logged_in(reviewer).post(
        entry_url(repository, grades()[0], "B1", "label"), {"verdict": "maybe"}
    )
    assert response.status_code == 400 and not HumanVerdict.objects.exists()


def test_viewers_read_but_do_not_label(viewer: User, repository: Repository, graded: RubricRevision) -> None:
    client = logged_in(viewer)
    first = grades()[0]
    page = client.get(entry_url(repository, first, "B1"))
    assert page.status_code == 200 and 'id="human-verdict"' not in page.content.decode()
    assert client.post(entry_url(repository, first, "B1", "label"), {"verdict": "pass"}).status_code == 403
    assert not HumanVerdict.objects.exists()


def test_outsiders_get_404_everywhere(outsider: User, repository: Repository, graded: RubricRevision) -> None:
    client = logged_in(outsider)
    first = grades()[0]
    assert client.get(queue_url(repository)).status_code == 404
    assert client.get(entry_url(repository, first, "B1")).status_code == 404
    assert client.post(entry_url(repository, first, "B1", "label"), {"verdict": "pass"}).status_code == 404
    b1 = graded.items.get(item_id="B1")
    assert (
        client.post(reverse("rubrics:item_dispute", args=[repository.pk, b1.pk]), {"reason": "x"}).status_code
        == 404
    )
    assert not HumanVerdict.objects.exists() and not Dispute.objects.exists()


def test_an_item_the_grade_does_not_have_is_404(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    assert logged_in(reviewer).get(entry_url(repository, grades()[0], "B9")).status_code == 404


def test_agreed_pairs_are_sampled_for_labelling(
    reviewer: User, repository: Repository, graded: RubricRevision, settings: Any
) -> None:
    settings.RUNS_AGREED_SAMPLE_PERCENT = 100
    html = logged_in(reviewer).get(queue_url(repository, kind="agreed")).content.decode()
    assert "0 of 4 reviewed" in html  # N1 and N3 of both runs
    settings.RUNS_AGREED_SAMPLE_PERCENT = 0
    assert "0 of 0 reviewed" in logged_in(reviewer).get(queue_url(repository, kind="agreed")).content.decode()


def test_a_regrade_that_disagreed_with_itself_is_queued(
    tmp_path: Path, reviewer: User, repository: Repository, admitted_revision: RubricRevision
) -> None:
    import_graded(tmp_path, repository, admitted_revision, regrade=True)
    html = logged_in(reviewer).get(queue_url(repository, kind="regrade")).content.decode()
    assert "0 of 1 reviewed" in html  # B1: the cache held fail, the regrade said pass
    regraded = grades()[0]
    page = logged_in(reviewer).get(entry_url(repository, regraded, "B1") + "?kind=regrade").content.decode()
    assert "Before the regrade this judge said <strong>fail</strong>" in page


# --- disputes and the re-review flag ----------------------------------------------------------------------


def task_page(client: Client, repository: Repository, revision: RubricRevision) -> str:
    return client.get(reverse("rubrics:task_detail", args=[repository.pk, revision.task_id])).content.decode()


def repository_page(client: Client, repository: Repository) -> str:
    return client.get(reverse("rubrics:repository_detail", args=[repository.pk])).content.decode()


def test_a_maintainer_disputes_a_blocker_from_a_disagreement_and_the_flag_shows(
    maintainer: User, viewer: User, repository: Repository, graded: RubricRevision
) -> None:
    client = logged_in(maintainer)
    b1 = graded.items.get(item_id="B1")
    first = grades()[0]
    assert "Dispute this blocker" in client.get(entry_url(repository, first, "B1")).content.decode()
    response = client.post(
        reverse("rubrics:item_dispute", args=[repository.pk, b1.pk]),
        {"reason": "GPU check is out of scope", "grade": first.pk},
    )
    assert response.status_code == 302
    dispute = Dispute.objects.get()
    assert (dispute.revision, dispute.item, dispute.source, dispute.grade) == (
        graded,
        b1,
        "disagreement",
        first,
    )
    for page in (
        task_page(logged_in(viewer), repository, graded),
        repository_page(logged_in(viewer), repository),
    ):
        assert "needs re-review" in page
    assert "GPU check is out of scope" in task_page(logged_in(viewer), repository, graded)


def test_a_dispute_needs_a_reason_and_a_maintainer(
    maintainer: User, reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    b1 = graded.items.get(item_id="B1")
    url = reverse("rubrics:item_dispute", args=[repository.pk, b1.pk])
    assert logged_in(reviewer).post(url, {"reason": "no"}).status_code == 403
    assert logged_in(maintainer).post(url, {"reason": "  "}).status_code == 400
    n1 = graded.items.get(item_id="N1")
    response = logged_in(maintainer).post(
        reverse("rubrics:item_dispute", args=[repository.pk, n1.pk]), {"reason": "x"}
    )
    assert response.status_code == 400 and "only a blocker is disputed" in response.content.decode()
    assert not Dispute.objects.exists()


def test_a_drafts_blocker_is_edited_not_disputed(
    maintainer: User, repository: Repository, graded: RubricRevision, draft_revision: RubricRevision
) -> None:
    b1 = draft_revision.items.get(item_id="B1")
    response = logged_in(maintainer).post(
        reverse("rubrics:item_dispute", args=[repository.pk, b1.pk]), {"reason": "x"}
    )
    assert response.status_code == 400 and "a draft is edited, not disputed" in response.content.decode()
    assert not Dispute.objects.exists()


def test_dismissing_with_a_reason_clears_the_flag(
    maintainer: User, repository: Repository, graded: RubricRevision
) -> None:
    client = logged_in(maintainer)
    b1 = graded.items.get(item_id="B1")
    client.post(reverse("rubrics:item_dispute", args=[repository.pk, b1.pk]), {"reason": "too strict"})
    dispute = Dispute.objects.get()
    dismiss = reverse("rubrics:flag_dismiss", args=[repository.pk, "dispute", dispute.pk])
    client.post(dismiss, {"reason": ""})
    assert "needs re-review" in task_page(client, repository, graded)
    client.post(dismiss, {"reason": "the GPU backend shares the check"})
    dispute.refresh_from_db()
    assert (
        dispute.dismissal_reason == "the GPU backend shares the check" and dispute.dismissed_by == maintainer
    )
    assert "needs re-review" not in task_page(client, repository, graded)
    assert "needs re-review" not in repository_page(client, repository)


def test_admitting_a_new_revision_clears_the_flag(
    maintainer: User, repository: Repository, graded: RubricRevision, make_revision: MakeRevision
) -> None:
    client = logged_in(maintainer)
    b1 = graded.items.get(item_id="B1")
    client.post(reverse("rubrics:item_dispute", args=[repository.pk, b1.pk]), {"reason": "too strict"})
    assert "needs re-review" in task_page(client, repository, graded)
    make_revision(RevisionStatus.ADMITTED)  # calibrated and admitted, retiring the graded one
    assert "needs re-review" not in task_page(client, repository, graded)
    assert Dispute.objects.get().is_open  # the old revision's history stays


def test_a_dispute_from_a_comment_starts_from_its_text(
    maintainer: User, reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    b1 = graded.items.get(item_id="B1")
    comment = b1.comments.create(author=reviewer, text="B1 <b>penalizes</b> the alt solution")
    url = reverse("rubrics:item_dispute", args=[repository.pk, b1.pk]) + f"?comment={comment.pk}"
    revision_page = logged_in(maintainer).get(
        reverse("rubrics:revision_detail", args=[repository.pk, graded.pk])
    )
    assert url in revision_page.content.decode()
    reviewer_page = logged_in(reviewer).get(
        reverse("rubrics:revision_detail", args=[repository.pk, graded.pk])
    )
    assert url not in reviewer_page.content.decode()
    html = logged_in(maintainer).get(url).content.decode()
    assert "B1 &lt;b&gt;penalizes&lt;/b&gt; the alt solution" in html
    logged_in(maintainer).post(url.split("?")[0], {"reason": comment.text, "comment": comment.pk})
    assert Dispute.objects.get().source == "comment"


def test_real_sdk_judges_over_http_land_in_the_queue_with_their_reported_model_ids(
    tmp_path: Path,
    reviewer: User,
    repository: Repository,
    admitted_revision: RubricRevision,
    monkeypatch: pytest.MonkeyPatch,
    fake_server: FakeProviderServer,
) -> None:
    point_sdks_at(fake_server, monkeypatch)
    fake_server.script(valid("pass"), valid("fail"))
    task_dir = write_task_dir(tmp_path / "checkout")
    run_dir = write_run(tmp_path / "runs", "rep0")
    grade(task_dir, run_dir, "anthropic:claude-sonnet-4-5-20250929", "openai:gpt-4o-2024-08-06")
    call_command("import_runs", str(tmp_path / "runs"), "--repository", repository.name, stdout=io.StringIO())
    graded = RunGrade.objects.get()
    primary, second = graded.judges.order_by("role")
    assert (primary.role, primary.model_id, primary.scripted) == (
        "primary",
        "claude-sonnet-4-5-20250929",
        False,
    )
    assert (second.role, second.model_id) == ("second", "gpt-4o-2024-08-06")
    assert primary.calls == 1 and second.calls == 1
    # Every judged item disagrees: B1 (B2 needs the tree), N1, N2, N3.
    html = logged_in(reviewer).get(queue_url(repository)).content.decode()
    assert "0 of 4 reviewed" in html
    page = logged_in(reviewer).get(entry_url(repository, graded, "B1")).content.decode()
    assert "<code>claude-sonnet-4-5-20250929</code>" in page and "<code>gpt-4o-2024-08-06</code>" in page
    assert 'class="badge scripted"' not in page


# --- human verdicts as report labels ------------------------------------------------------------------


def test_export_labels_turns_fully_labelled_runs_into_human_mergeable_verdicts(
    tmp_path: Path, reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    first, second = grades()
    client = logged_in(reviewer)
    client.post(
        entry_url(repository, first, "B1", "label"), {"verdict": "fail"}
    )  # B1 is the only judged blocker
    client.post(entry_url(repository, first, "N2", "label"), {"verdict": "pass"})  # a non-blocker: no effect
    client.post(entry_url(repository, second, "B1", "label"), {"verdict": "unsure"})  # says nothing
    out = io.StringIO()
    call_command("export_labels", "--repository", repository.name, "--format", "runs", stdout=out)
    # Each run with how it was drawn (rubric report weighs it by 1 / inclusion_probability).
    assert json.loads(out.getvalue()) == {
        first.run.source: {"mergeable": False, "inclusion_probability": 1.0}
    }
    client.post(entry_url(repository, second, "B1", "label"), {"verdict": "pass"})
    target = tmp_path / "labels.json"
    call_command("export_labels", "--repository", repository.name, "--out", str(target), stdout=io.StringIO())
    assert json.loads(target.read_text()) == {
        first.run.source: {"mergeable": False, "inclusion_probability": 1.0},
        second.run.source: {"mergeable": True, "inclusion_probability": 1.0},
    }
    assert first.run.source.endswith("/runs/rep0")


def test_a_run_settled_before_judging_gets_no_label(
    tmp_path: Path, reviewer: User, repository: Repository, admitted_revision: RubricRevision
) -> None:
    task_dir = write_task_dir(tmp_path / "checkout")
    run_dir = write_run(tmp_path / "runs", "failed", passed=False)
    data = grade(task_dir, run_dir, write_scripted(tmp_path / "p.json", PASSING))
    assert data["details"]["status"] == "not_mergeable" and data["details"]["judge"] is None
    call_command("import_runs", str(tmp_path / "runs"), "--repository", repository.name, stdout=io.StringIO())
    graded = RunGrade.objects.get()
    assert review_queue.human_mergeable(graded, {"B1": "fail"}) is None


def test_a_judged_run_with_every_blocker_labelled_gets_a_label(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    first = grades()[0]
    assert review_queue.human_mergeable(first, {"B1": "pass"}) is True
    assert review_queue.human_mergeable(first, {"B1": "fail"}) is False
    assert review_queue.human_mergeable(first, {"B1": "unsure"}) is None
    assert review_queue.human_mergeable(first, {"N1": "fail"}) is None
