"""Downloads (rubric.json, zip) and writing into the checkout: admitted revisions only; maintainers only,
but for rubric.json, which every role downloads."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from grading.loaders import load_rubric
from rubrics_app.models import (
    AuditEvent,
    AuditVerb,
    CalibrationRun,
    CalibrationStatus,
    Job,
    JobKind,
    JobStatus,
    Repository,
    RevisionStatus,
    RubricRevision,
)
from rubrics_app.services.rubrics.exports import export_revision_to_checkout
from tests.app.conftest import CALIBRATION_FILES, ORACLE_DIFF, RUBRIC, MakeRevision, run_queued_calibration
from tests.gitrepo import GitRepo

HX = {"HX-Request": "true"}


def run_job(job: Job) -> Job:
    """Run a job the view queued, here (a `db` test never commits, so it is never sent to a worker)."""
    export_revision_to_checkout(job.pk)
    job.refresh_from_db()
    return job


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(name: str, revision: RubricRevision) -> str:
    return reverse(f"rubrics:{name}", args=[revision.task.repository_id, revision.pk])


def test_rubric_json_of_an_admitted_revision_validates(
    maintainer: User, make_revision: MakeRevision, tmp_path: Path
) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    response = logged_in(maintainer).get(url("export_json", admitted))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="rubric.json"'
    assert json.loads(response.content) == RUBRIC
    # exactly what `rubric validate` accepts, calib diffs beside it
    (tmp_path / "rubric.json").write_bytes(response.content)
    for rel, data in CALIBRATION_FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    assert load_rubric(tmp_path / "rubric.json").task == "fix_fraction_gt1"
    assert AuditEvent.objects.filter(revision=admitted, verb=AuditVerb.EXPORTED, actor=maintainer).exists()


def test_the_zip_holds_the_task_directory(maintainer: User, make_revision: MakeRevision) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    response = logged_in(maintainer).get(url("export_zip", admitted))
    assert response["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        names = sorted(archive.namelist())
        assert names == [
            "tasks/fix_fraction_gt1/calib/alt.diff",
            "tasks/fix_fraction_gt1/calib/lazy.diff",
            "tasks/fix_fraction_gt1/rubric.json",
        ]
        assert archive.read("tasks/fix_fraction_gt1/calib/lazy.diff") == CALIBRATION_FILES["calib/lazy.diff"]


@pytest.mark.parametrize("status", [RevisionStatus.DRAFT, RevisionStatus.APPROVED])
def test_nothing_but_an_admitted_revision_is_exported(
    maintainer: User, make_revision: MakeRevision, status: str
) -> None:
    revision = make_revision(status)
    client = logged_in(maintainer)
    assert client.get(url("export_json", revision)).status_code == 404
    assert client.get(url("export_zip", revision)).status_code == 404
    assert client.post(url("export_checkout", revision)).status_code == 404
    page = client.get(url("revision_detail", revision)).content.decode()
    assert "Download rubric.json" not in page


def test_only_maintainers_export(
    reviewer: User, viewer: User, outsider: User, make_revision: MakeRevision
) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    for user, status in ((reviewer, 403), (viewer, 403), (outsider, 404)):
        client = logged_in(user)
        assert client.get(url("export_zip", admitted)).status_code == status
        assert client.get(url("export_zip", admitted) + "?private=1").status_code == status
        assert client.post(url("export_checkout", admitted), headers=HX).status_code == status
    assert not AuditEvent.objects.filter(verb=AuditVerb.EXPORTED).exists()


def test_write_to_the_checkout(maintainer: User, make_revision: MakeRevision, tmp_path: Path) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    checkout = Path(admitted.task.repository.checkout_path)
    checkout.mkdir(parents=True)
    (checkout / "README.md").write_text("untouched\n")
    client = logged_in(maintainer)
    response = client.post(url("export_checkout", admitted), headers=HX)
    # It runs git: a job, whose page shows how it went (polling until it ends).
    job = Job.objects.get(kind=JobKind.EXPORT_REVISION)
    job_url = reverse("rubrics:job_detail", args=[admitted.task.repository_id, job.pk])
    assert response["HX-Redirect"] == job_url
    assert 'hx-trigger="every 2s"' in client.get(job_url, headers=HX).content.decode()
    run_job(job)
    task_dir = checkout / "tasks" / "fix_fraction_gt1"
    assert json.loads((task_dir / "rubric.json").read_text()) == RUBRIC
    assert (task_dir / "calib" / "alt.diff").read_bytes() == CALIBRATION_FILES["calib/alt.diff"]
    assert (checkout / "README.md").read_text() == "untouched\n"
    done = client.get(job_url, headers=HX)
    assert done.status_code == 286 and "Wrote tasks/fix_fraction_gt1/rubric.json" in done.content.decode()


def test_write_as_a_commit_on_a_new_branch(maintainer: User, make_revision: MakeRevision) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    repo = GitRepo(Path(admitted.task.repository.checkout_path))
    repo.write("README.md", "hello\n")
    repo.commit("base")
    repo.write("README.md", "hello, unsaved work\n")
    head, status = repo.head(), repo.git("status", "--porcelain")
    client = logged_in(maintainer)
    client.post(url("export_checkout", admitted), {"branch": "rubrics/fix-fraction"})
    job = run_job(Job.objects.get(kind=JobKind.EXPORT_REVISION))
    assert repo.git("branch", "--show-current").strip() == "main"
    assert (repo.head(), repo.git("status", "--porcelain")) == (head, status)
    commit = repo.git("rev-parse", "rubrics/fix-fraction").strip()
    page = client.get(reverse("rubrics:job_detail", args=[admitted.task.repository_id, job.pk]))
    text = " ".join(page.content.decode().split())
    assert (
        f"Committed on the new branch <code>rubrics/fix-fraction</code> as <code>{commit[:12]}</code>" in text
    )
    assert "Your checkout was not touched" in text
    files = repo.git("show", "--name-only", "--format=", commit).split()
    assert sorted(files) == [
        "tasks/fix_fraction_gt1/calib/alt.diff",
        "tasks/fix_fraction_gt1/calib/lazy.diff",
        "tasks/fix_fraction_gt1/rubric.json",
    ]


def test_a_bad_branch_name_writes_nothing(maintainer: User, make_revision: MakeRevision) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    checkout = Path(admitted.task.repository.checkout_path)
    checkout.mkdir(parents=True)
    response = logged_in(maintainer).post(
        url("export_checkout", admitted), {"branch": "--force"}, follow=True
    )
    assert "Nothing was written" in response.content.decode()
    assert not (checkout / "tasks").exists()


def test_a_missing_checkout_is_reported(maintainer: User, make_revision: MakeRevision) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    client = logged_in(maintainer)
    client.post(url("export_checkout", admitted))
    job = run_job(Job.objects.get(kind=JobKind.EXPORT_REVISION))
    assert job.status == JobStatus.FAILED
    page = client.get(
        reverse("rubrics:job_detail", args=[admitted.task.repository_id, job.pk])
    ).content.decode()
    assert "Nothing was written" in page and "not a directory" in page


def test_upload_review_admit_download_round_trip(maintainer: User, repository: Repository) -> None:
    original = json.dumps(RUBRIC, indent=2).encode()
    members = {"tasks/fix_fraction_gt1/rubric.json": original}
    members.update({f"tasks/fix_fraction_gt1/{p}": d for p, d in CALIBRATION_FILES.items()})
    # The task's prompt and its own files: calibration needs them to admit.
    members["tasks/fix_fraction_gt1/task.json"] = json.dumps(
        {"id": "fix_fraction_gt1", "prompt": "Fix it."}
    ).encode()
    members["tasks/fix_fraction_gt1/oracle.diff"] = ORACLE_DIFF
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    client = logged_in(maintainer)
    client.post(
        reverse("rubrics:rubric_upload", args=[repository.pk]),
        {"file": SimpleUploadedFile("r.zip", buffer.getvalue())},
    )
    revision = RubricRevision.objects.get()
    for item in revision.ordered_items():
        client.post(
            reverse("rubrics:item_approve", args=[revision.task.repository_id, item.pk]),
            {"version": item.version},
            headers=HX,
        )
    # No passing calibration yet: "Admit" runs one, which admits the revision when every row holds.
    response = client.post(url("revision_admit", revision))
    run = CalibrationRun.objects.get(revision=revision)
    assert response["Location"] == reverse("rubrics:calibration_detail", args=[repository.pk, run.pk])
    assert run_queued_calibration().status == CalibrationStatus.PASSED
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.ADMITTED
    downloaded = client.get(url("export_json", revision)).content
    assert json.loads(downloaded) == json.loads(original)
    assert downloaded == (json.dumps(RUBRIC, indent=2, ensure_ascii=False) + "\n").encode()


def test_a_viewer_downloads_the_admitted_rubric_json_but_not_a_drafts(
    viewer: User, outsider: User, make_revision: MakeRevision
) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    client = logged_in(viewer)
    page = client.get(url("revision_detail", admitted)).content.decode()
    assert url("export_json", admitted) in page and "Download zip" not in page
    response = client.get(url("export_json", admitted))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="rubric.json"'
    assert json.loads(response.content) == RUBRIC
    assert AuditEvent.objects.filter(revision=admitted, verb=AuditVerb.EXPORTED, actor=viewer).exists()
    # A draft (or an approved revision not yet admitted) has no rubric.json to download, for anyone.
    for status in (RevisionStatus.DRAFT, RevisionStatus.APPROVED):
        revision = make_revision(status)
        assert client.get(url("export_json", revision)).status_code == 404
        page = client.get(url("revision_detail", revision)).content.decode()
        assert url("export_json", revision) not in page
    assert logged_in(outsider).get(url("export_json", admitted)).status_code == 404
