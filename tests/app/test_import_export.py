from __future__ import annotations

import io
import json
import os
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from grading.cli.rubric import main as rubric_cli
from grading.loaders import load_rubric, load_task
from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditEvent,
    AuditVerb,
    Repository,
    RevisionStatus,
    RubricRevision,
    Task,
    TransitionError,
)
from rubrics_app.services.rubrics import exports, imports, revisions
from rubrics_app.services.rubrics import imports as rubric_import
from rubrics_app.services.rubrics.exports import ExportError
from rubrics_app.services.rubrics.files import ImportFailed
from tests.app.conftest import (
    CALIBRATION_FILES,
    ORACLE_DIFF,
    RUBRIC,
    MakeRevision,
    calibrate,
    rubric_data,
    sound_script,
)
from tests.gitrepo import GitRepo


def make_zip(members: dict[str, bytes], symlinks: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


def task_zip(data: dict[str, Any] | None = None, prefix: str = "tasks/fix_fraction_gt1/") -> bytes:
    members = {f"{prefix}rubric.json": json.dumps(data or RUBRIC).encode()}
    members.update({f"{prefix}{path}": content for path, content in CALIBRATION_FILES.items()})
    return make_zip(members)


def upload(raw: bytes, name: str = "rubrics.zip") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, raw, content_type="application/zip")


def approve_and_admit(revision: RubricRevision, by: Any) -> RubricRevision:
    if not revision.task.oracle_diff:  # imported without the task's own files and prompt
        # Before approval: the prompt of a task holding an approved revision is frozen (0006).
        Task.objects.filter(pk=revision.task_id).update(oracle_diff=ORACLE_DIFF, spec_prompt="Fix it.")
        revision.task.refresh_from_db()
    for item in revision.ordered_items():
        revisions.approve_item(item, by=Actor.member(by))
    revision.refresh_from_db()
    calibrate(revision, by)
    revisions.admit(revision, by=Actor.member(by))
    revision.refresh_from_db()
    return revision


def problems_of(exc: pytest.ExceptionInfo[ImportFailed]) -> list[str]:
    return [str(p) for p in exc.value.problems]


# --- round trips ------------------------------------------------------------------------------------------


def test_it_round_trips_an_uploaded_zip(repository: Repository, maintainer: Any) -> None:
    (revision,) = imports.import_rubric_zip(repository, upload(task_zip()), Actor.member(maintainer))
    assert revision.status == RevisionStatus.DRAFT
    assert revision.task.task_id == "fix_fraction_gt1"
    approve_and_admit(revision, maintainer)

    assert json.loads(exports.export_rubric_json(revision, by=Actor.member(maintainer))) == RUBRIC

    with zipfile.ZipFile(io.BytesIO(exports.export_zip(revision, by=Actor.member(maintainer)))) as archive:
        names = sorted(archive.namelist())
        assert names == [
            "tasks/fix_fraction_gt1/calib/alt.diff",
            "tasks/fix_fraction_gt1/calib/lazy.diff",
            "tasks/fix_fraction_gt1/rubric.json",
        ]
        assert archive.read("tasks/fix_fraction_gt1/calib/lazy.diff") == CALIBRATION_FILES["calib/lazy.diff"]
        assert json.loads(archive.read("tasks/fix_fraction_gt1/rubric.json")) == RUBRIC


def test_an_exported_zip_imports_back_as_the_same_rubric(
    admitted_revision: RubricRevision, maintainer: Any
) -> None:
    raw = exports.export_zip(admitted_revision, by=Actor.member(maintainer))
    (again,) = imports.import_rubric_zip(
        admitted_revision.task.repository, upload(raw), Actor.member(maintainer)
    )
    assert again.task == admitted_revision.task
    assert again.number == admitted_revision.number + 1
    assert again.to_rubric_dict() == admitted_revision.to_rubric_dict()
    assert exports.export_zip(admitted_revision, by=Actor.command_line()) == raw  # same revision, same bytes


def test_the_exported_json_is_what_rubric_validate_accepts(
    admitted_revision: RubricRevision, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_dir = tmp_path / "tasks" / "fix_fraction_gt1"
    (task_dir / "calib").mkdir(parents=True)
    (task_dir / "rubric.json").write_bytes(
        exports.export_rubric_json(admitted_revision, by=Actor.command_line())
    )
    for path, content in CALIBRATION_FILES.items():
        (task_dir / path).write_bytes(content)
    assert rubric_cli(["validate", str(task_dir / "rubric.json")]) == 0
    assert "ok" in capsys.readouterr().out


def test_a_bare_rubric_json_upload_becomes_a_draft(repository: Repository, maintainer: Any) -> None:
    data = rubric_data(task="no_calibration")
    del data["calibration"]
    (revision,) = imports.import_rubric_zip(
        repository, upload(json.dumps(data).encode(), "r.json"), Actor.member(maintainer)
    )
    assert revision.to_rubric_dict() == data
    assert AuditEvent.objects.filter(verb=AuditVerb.IMPORTED, revision=revision, actor=maintainer).exists()


def test_a_zip_with_rubric_json_at_its_root_and_task_json(repository: Repository, maintainer: Any) -> None:
    task_json = {
        "id": "fix_fraction_gt1",
        "prompt": "Fix it when the issue is filed.",
        "prompt_style": "issue",
        "gate": ["pass", "format_ok"],
        "base_commit": "abc123",
        "base_date": "2025-11-03",
        "source_pr_url": "https://github.com/example/project/pull/7",
        "difficulty": "hard",
    }
    buffer = io.BytesIO(task_zip(prefix=""))
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr("task.json", json.dumps(task_json))
    raw = buffer.getvalue()
    (revision,) = imports.import_rubric_zip(repository, upload(raw), Actor.member(maintainer))
    task = Task.objects.get(pk=revision.task_id)
    assert task.issue_prompt == "Fix it when the issue is filed." and task.spec_prompt == ""
    assert task.gate == ["pass", "format_ok"]
    assert (task.base_commit, task.base_date) == ("abc123", "2025-11-03")
    assert task.source_pr_url == "https://github.com/example/project/pull/7"
    assert task.extra["difficulty"] == "hard"


# --- bad uploads: listed, and nothing half-imported -------------------------------------------------------


def assert_nothing_imported() -> None:
    assert RubricRevision.objects.count() == 0
    assert Task.objects.count() == 0


@pytest.mark.parametrize(
    ("member", "problem"),
    [
        ("../evil/rubric.json", "path leaves the archive"),
        ("tasks/x/../../../evil.diff", "path leaves the archive"),
        ("/etc/cron.d/rubric.json", "absolute path"),
        ("C:/Windows/rubric.json", "absolute path"),
        ("tasks\\..\\..\\evil.json", "backslash"),
    ],
)
def test_it_refuses_path_traversal(
    repository: Repository, maintainer: Any, member: str, problem: str
) -> None:
    raw = make_zip(
        {**{f"tasks/fix_fraction_gt1/{p}": c for p, c in CALIBRATION_FILES.items()}, member: b"{}"}
    )
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(raw), Actor.member(maintainer))
    assert [p.file for p in exc.value.problems] == [f"rubrics.zip: {member}"]
    assert problem in exc.value.problems[0].message
    assert_nothing_imported()


def test_it_refuses_symbolic_links(repository: Repository, maintainer: Any) -> None:
    raw = make_zip(
        {"tasks/fix_fraction_gt1/rubric.json": json.dumps(RUBRIC).encode()},
        symlinks={"tasks/fix_fraction_gt1/calib/lazy.diff": "/etc/passwd"},
    )
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(raw), Actor.member(maintainer))
    assert problems_of(exc) == ["rubrics.zip: tasks/fix_fraction_gt1/calib/lazy.diff: symbolic link"]
    assert_nothing_imported()


def test_it_refuses_an_upload_over_the_size_limit(
    repository: Repository, maintainer: Any, settings: Any
) -> None:
    raw = task_zip()
    settings.RUBRIC_UPLOAD_MAX_BYTES = len(raw) - 1
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(raw), Actor.member(maintainer))
    assert "the limit is" in problems_of(exc)[0]
    # A stream without a size is cut at the limit, not read whole.
    with pytest.raises(ImportFailed):
        imports.import_rubric_zip(repository, io.BytesIO(raw), Actor.member(maintainer))
    assert_nothing_imported()


def test_it_refuses_a_zip_bomb(repository: Repository, maintainer: Any, settings: Any) -> None:
    settings.RUBRIC_ZIP_MAX_UNCOMPRESSED_BYTES = 1_000_000
    raw = make_zip({"tasks/fix_fraction_gt1/rubric.json": b" " * 2_000_000})
    assert len(raw) < 20_000
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(raw), Actor.member(maintainer))
    assert "uncompressed; the limit is 1000000" in problems_of(exc)[0]
    assert_nothing_imported()


def test_it_refuses_too_many_members(repository: Repository, maintainer: Any, settings: Any) -> None:
    settings.RUBRIC_ZIP_MAX_MEMBERS = 3
    raw = make_zip({f"junk/{i}.txt": b"x" for i in range(4)})
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(raw), Actor.member(maintainer))
    assert problems_of(exc) == ["rubrics.zip: 4 members; the limit is 3"]


def test_it_refuses_what_is_not_a_zip_or_json(repository: Repository, maintainer: Any) -> None:
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(b"PK\x03\x04garbage"), Actor.member(maintainer))
    assert problems_of(exc) == ["rubrics.zip: not a zip file"]
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(b'{"schema": ', "rubric.json"), Actor.member(maintainer))
    assert problems_of(exc) == ["rubric.json: line 1 column 12: malformed JSON: Expecting value"]
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(b"\xff\xfe", "rubric.json"), Actor.member(maintainer))
    assert problems_of(exc) == ["rubric.json: not UTF-8 text (byte 0)"]  # grading's reader's words


def test_one_invalid_task_imports_nothing_and_lists_every_problem(
    repository: Repository, maintainer: Any
) -> None:
    bad = rubric_data(task="second_task", blockers=RUBRIC["blockers"][:1])
    bad["non_blockers"] = [{"id": "N1", "criterion": ""}, *RUBRIC["non_blockers"][1:]]
    members = {
        "tasks/fix_fraction_gt1/rubric.json": json.dumps(RUBRIC).encode(),
        "tasks/second_task/rubric.json": json.dumps(bad).encode(),
        **{
            f"tasks/{t}/{p}": c
            for t in ("fix_fraction_gt1", "second_task")
            for p, c in CALIBRATION_FILES.items()
        },
    }
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(make_zip(members)), Actor.member(maintainer))
    problems = problems_of(exc)
    # grading.schema words the count rule; this test only needs it named with its file and JSON path.
    assert any(p.startswith("tasks/second_task/rubric.json: blockers: ") for p in problems)
    assert "tasks/second_task/rubric.json: non_blockers[0].criterion: must not be blank" in problems
    assert not any(p.startswith("tasks/fix_fraction_gt1") for p in problems)
    assert_nothing_imported()


def test_a_missing_calibration_diff_is_a_problem(repository: Repository, maintainer: Any) -> None:
    raw = make_zip({"tasks/fix_fraction_gt1/rubric.json": json.dumps(RUBRIC).encode()})
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(raw), Actor.member(maintainer))
    assert problems_of(exc) == [
        "tasks/fix_fraction_gt1/rubric.json: calibration.lazy[0]: 'calib/lazy.diff' is not in the upload",
        "tasks/fix_fraction_gt1/rubric.json: calibration.alt[0]: 'calib/alt.diff' is not in the upload",
    ]


def test_a_calibration_diff_listed_twice_is_a_problem(repository: Repository, maintainer: Any) -> None:
    data = rubric_data(
        calibration={"lazy": ["calib/lazy.diff", "calib/./lazy.diff"], "alt": ["calib/lazy.diff"]}
    )
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(task_zip(data)), Actor.member(maintainer))
    assert problems_of(exc) == [
        "tasks/fix_fraction_gt1/rubric.json: calibration.lazy[1]: 'calib/./lazy.diff' is listed twice"
    ]


def test_the_directory_names_the_task(repository: Repository, maintainer: Any) -> None:
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(
            repository, upload(task_zip(prefix="tasks/other/")), Actor.member(maintainer)
        )
    assert problems_of(exc) == [
        "tasks/other/rubric.json: task: task 'fix_fraction_gt1' is not the directory's name 'other'"
    ]


def test_a_task_id_cannot_leave_its_directory(repository: Repository, maintainer: Any) -> None:
    raw = task_zip(rubric_data(task="../../etc"), prefix="")
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(raw), Actor.member(maintainer))
    assert problems_of(exc) == ["rubric.json: task: a task id is letters, digits, '.', '_' and '-'"]


def test_text_no_database_can_store_is_a_problem_not_a_crash(repository: Repository, maintainer: Any) -> None:
    # json.loads turns "\\ud800" into a lone surrogate (not UTF-8: both databases fail to encode it) and
    # "\\u0000" into NUL (PostgreSQL text refuses it); both used to end the upload in a 500.
    data = rubric_data(intent="bad \ud800 text")
    second = rubric_data(task="second")
    second["blockers"] = [{**RUBRIC["blockers"][0], "criterion": "a\x00b"}, *RUBRIC["blockers"][1:]]
    task_json = json.dumps({"id": "fix_fraction_gt1", "prompt": "p", "note\udc80": "x"}).encode()
    members = {
        "tasks/fix_fraction_gt1/rubric.json": json.dumps(data).encode(),
        "tasks/second/rubric.json": json.dumps(second).encode(),
        "tasks/third/rubric.json": json.dumps(rubric_data(task="third")).encode(),
        "tasks/third/task.json": task_json.replace(b"fix_fraction_gt1", b"third"),
        **{
            f"tasks/{t}/{p}": c
            for t in ("fix_fraction_gt1", "second", "third")
            for p, c in CALIBRATION_FILES.items()
        },
    }
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(make_zip(members)), Actor.member(maintainer))
    # The strict JSON reader refuses a lone surrogate where it reads the file; NUL is valid JSON that
    # PostgreSQL's text cannot hold, refused when the rubric's text is checked.
    assert sorted(problems_of(exc)) == sorted(
        [
            "tasks/fix_fraction_gt1/rubric.json: intent: a lone surrogate escape (such as \\ud800) is not "
            "Unicode text",
            "tasks/second/rubric.json: blockers[0].criterion: holds a NUL character (\\u0000)",
            "tasks/third/task.json: note\\udc80: a lone surrogate escape (such as \\ud800) is not "
            "Unicode text",
        ]
    )
    assert_nothing_imported()


@pytest.mark.parametrize("depth", [150, 9_000, 30_000])
def test_deeply_nested_json_is_a_problem_not_a_crash(
    repository: Repository, maintainer: Any, depth: int
) -> None:
    # 9000 levels decode, but SQLite's JSON CHECK constraint refuses them (an IntegrityError) and a recursive
    # walk would overflow Python's stack; 30000 levels overflow json.loads itself (RecursionError).
    deep = "[" * depth + "]" * depth
    spec = '{"id": "fix_fraction_gt1", "prompt": "p", "notes": ' + deep + "}"
    members = {
        "tasks/fix_fraction_gt1/rubric.json": json.dumps(RUBRIC).encode(),
        "tasks/fix_fraction_gt1/task.json": spec.encode(),
        "tasks/other/rubric.json": deep.encode(),
        **{f"tasks/fix_fraction_gt1/{p}": c for p, c in CALIBRATION_FILES.items()},
    }
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(make_zip(members)), Actor.member(maintainer))
    problems = problems_of(exc)
    assert len(problems) == 2, problems
    if depth == 30_000:
        assert problems == [
            "tasks/fix_fraction_gt1/task.json: malformed JSON: nested too deeply",
            "tasks/other/rubric.json: malformed JSON: nested too deeply",
        ]
    else:
        assert problems[0].startswith("tasks/fix_fraction_gt1/task.json: notes[0][0]")
        assert problems[0].endswith(": nested more than 100 levels deep")
        assert problems[1].startswith("tasks/other/rubric.json: [0][0]")
    assert_nothing_imported()


def test_values_beyond_what_the_columns_hold_are_problems(repository: Repository, maintainer: Any) -> None:
    long_path = "calib/" + "x" * 600 + ".diff"
    data = rubric_data(
        scope={**RUBRIC["scope"], "max_changed_lines": 2**63},
        calibration={"lazy": [{"path": "calib/lazy.diff", "breaks": ["B1"]}], "alt": [long_path]},
    )
    members = {
        "tasks/fix_fraction_gt1/rubric.json": json.dumps(data).encode(),
        "tasks/fix_fraction_gt1/calib/lazy.diff": CALIBRATION_FILES["calib/lazy.diff"],
        f"tasks/fix_fraction_gt1/{long_path}": CALIBRATION_FILES["calib/alt.diff"],
    }
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(make_zip(members)), Actor.member(maintainer))
    problems = problems_of(exc)
    assert len(problems) == 2, problems
    assert problems[0].startswith(
        f"tasks/fix_fraction_gt1/rubric.json: scope.max_changed_lines: {2**63} is more than this app stores"
    )
    assert problems[1] == (
        "tasks/fix_fraction_gt1/rubric.json: calibration.alt[0]: a calibration path is at most 500 characters"
    )
    assert_nothing_imported()


def test_task_json_values_the_task_row_refuses_are_problems(repository: Repository, maintainer: Any) -> None:
    spec = {"id": "fix_fraction_gt1", "prompt": "p", "base_commit": "a" * 100, "source_pr_url": "https://"}
    members = {
        "tasks/fix_fraction_gt1/rubric.json": json.dumps(RUBRIC).encode(),
        "tasks/fix_fraction_gt1/task.json": json.dumps(spec).encode(),
        **{f"tasks/fix_fraction_gt1/{p}": c for p, c in CALIBRATION_FILES.items()},
    }
    with pytest.raises(ImportFailed) as exc:
        imports.import_rubric_zip(repository, upload(make_zip(members)), Actor.member(maintainer))
    assert problems_of(exc) == [
        "tasks/fix_fraction_gt1/task.json: base_commit: Ensure this value has at most 64 characters "
        "(it has 100).",
        "tasks/fix_fraction_gt1/task.json: source_pr_url: Enter a valid URL.",
    ]
    assert_nothing_imported()


def test_only_a_maintainer_imports(repository: Repository, reviewer: Any, outsider: Any) -> None:
    for user in (reviewer, outsider):
        with pytest.raises(PermissionDenied):
            imports.import_rubric_zip(repository, upload(task_zip()), Actor.member(user))
    assert_nothing_imported()


# --- export -----------------------------------------------------------------------------------------------


def test_only_admitted_revisions_are_exported(make_revision: MakeRevision, maintainer: Any) -> None:
    for status in (RevisionStatus.DRAFT, RevisionStatus.APPROVED):
        revision = make_revision(status)
        with pytest.raises(TransitionError):
            exports.export_rubric_json(revision, by=Actor.command_line())
        with pytest.raises(TransitionError):
            exports.export_zip(revision, by=Actor.command_line())
        with pytest.raises(TransitionError):
            exports.write_to_checkout(revision, by=Actor.member(maintainer))
    assert not AuditEvent.objects.filter(verb=AuditVerb.EXPORTED).exists()


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.fixture
def checkout(repository: Repository, git_repo: GitRepo) -> GitRepo:
    git_repo.write("src/fraction.py", "def fraction(x):\n    return x\n")
    git_repo.write("tasks/fix_fraction_gt1/task.json", '{"id": "fix_fraction_gt1", "prompt": "p"}\n')
    git_repo.write("tasks/fix_fraction_gt1/calib/old.diff", "stale diff of an earlier revision\n")
    git_repo.commit("base")
    repository.checkout_path = str(git_repo.path)
    repository.save()
    return git_repo


def test_it_writes_into_the_checkout_touching_no_other_file(
    admitted_revision: RubricRevision, checkout: GitRepo, maintainer: Any
) -> None:
    checkout.write("src/fraction.py", "def fraction(x):\n    return x  # uncommitted work\n")
    before = snapshot(checkout.path)
    result = exports.write_to_checkout(admitted_revision, by=Actor.member(maintainer))
    assert result.paths == [
        "tasks/fix_fraction_gt1/rubric.json",
        "tasks/fix_fraction_gt1/calib/lazy.diff",
        "tasks/fix_fraction_gt1/calib/alt.diff",
    ]
    after = snapshot(checkout.path)
    assert {k: v for k, v in after.items() if k not in result.paths} == before
    written = checkout.path / "tasks/fix_fraction_gt1/rubric.json"
    assert json.loads(written.read_bytes()) == RUBRIC
    assert load_rubric(written).task == "fix_fraction_gt1"  # calib files are there too
    assert not list(checkout.path.rglob("*.tmp"))
    assert result.commit is None
    event = AuditEvent.objects.get(verb=AuditVerb.EXPORTED)
    assert event.actor == maintainer and event.detail["paths"] == result.paths


def checkout_state(repo: GitRepo) -> tuple[str, str, str, bytes, dict[str, bytes]]:
    """Everything of a checkout a maintainer works with: HEAD, the current branch, status, index, files."""
    return (
        repo.git("rev-parse", "HEAD"),
        repo.git("symbolic-ref", "HEAD"),
        repo.git("status", "--porcelain", "--untracked-files=all"),
        (repo.path / ".git" / "index").read_bytes(),
        snapshot(repo.path),
    )


def test_it_commits_exactly_those_files_on_a_new_branch_leaving_the_checkout_alone(
    admitted_revision: RubricRevision, checkout: GitRepo, maintainer: Any
) -> None:
    checkout.write("src/fraction.py", "dirty\n")
    checkout.git("add", "src/fraction.py")  # staged by the maintainer: must not land in the export's commit
    checkout.write("src/fraction.py", "dirtier, unstaged\n")
    checkout.write("notes.txt", "untracked\n")
    base = checkout.head()
    before = checkout_state(checkout)
    result = exports.write_to_checkout(
        admitted_revision, branch="rubrics/export-1", by=Actor.member(maintainer)
    )
    assert checkout_state(checkout) == before  # HEAD, branch, status, index bytes and every file
    assert not (checkout.path / "tasks/fix_fraction_gt1/rubric.json").exists()
    assert result.commit == checkout.git("rev-parse", "refs/heads/rubrics/export-1").strip()
    assert checkout.git("rev-parse", f"{result.commit}^").strip() == base
    changed = checkout.git("diff", "--name-only", base, result.commit).split()
    assert sorted(changed) == sorted(result.paths)
    shown = checkout.git("show", f"{result.commit}:tasks/fix_fraction_gt1/rubric.json")
    assert json.loads(shown) == RUBRIC
    # What the commit does not name is HEAD's: the staged edit stays out, the old calib diff stays in.
    assert checkout.git("show", f"{result.commit}:src/fraction.py") == "def fraction(x):\n    return x\n"
    assert "tasks/fix_fraction_gt1/calib/old.diff" in checkout.git(
        "ls-tree", "-r", "--name-only", result.commit
    )
    log = checkout.git("log", "-1", "--format=%an <%ae>|%cn|%s", result.commit).strip()
    subject = "Rubrics: export admitted revisions of fix_fraction_gt1"
    assert log == f"maintainer <maintainer@example.com>|maintainer|{subject}"


def test_a_branch_export_into_a_repository_without_commits_has_no_parent(
    admitted_revision: RubricRevision, repository: Repository, maintainer: Any, tmp_path: Path
) -> None:
    empty = GitRepo(tmp_path / "empty")
    repository.checkout_path = str(empty.path)
    repository.save()
    result = exports.write_to_checkout(admitted_revision, branch="rubrics/first", by=Actor.member(maintainer))
    assert result.commit is not None
    assert checkout_parents(empty, result.commit) == []
    assert empty.git("rev-parse", "--verify", "--quiet", "HEAD", check=False) == ""  # still unborn
    assert sorted(empty.git("ls-tree", "-r", "--name-only", result.commit).split()) == sorted(result.paths)


def checkout_parents(repo: GitRepo, commit: str) -> list[str]:
    return repo.git("log", "-1", "--format=%P", commit).split()


def test_exporting_the_same_revision_again_on_a_branch_needs_no_commit(
    admitted_revision: RubricRevision, checkout: GitRepo, maintainer: Any
) -> None:
    first = exports.write_to_checkout(admitted_revision, branch="rubrics/one", by=Actor.member(maintainer))
    checkout.git("merge", "--ff-only", "rubrics/one")  # the maintainer takes the export into main
    again = exports.write_to_checkout(admitted_revision, branch="rubrics/two", by=Actor.member(maintainer))
    # HEAD already holds every file: the new branch points at HEAD, with no empty commit on top. (Without
    # the merge this would hold only by chance, when both commits fall in the same second.)
    assert again.commit == first.commit == checkout.git("rev-parse", "HEAD").strip()
    assert checkout.git("rev-parse", "rubrics/two").strip() == first.commit


@pytest.mark.parametrize("branch", ["-delete-me", "bad..name", "main"])
def test_it_refuses_a_bad_or_existing_branch(
    admitted_revision: RubricRevision, checkout: GitRepo, maintainer: Any, branch: str
) -> None:
    before = checkout_state(checkout)
    main = checkout.git("rev-parse", "main")
    with pytest.raises(ExportError):
        exports.write_to_checkout(admitted_revision, branch=branch, by=Actor.member(maintainer))
    assert checkout_state(checkout) == before
    assert checkout.git("rev-parse", "main") == main


def test_held_out_rubrics_go_to_the_private_path(
    admitted_revision: RubricRevision, checkout: GitRepo, maintainer: Any, tmp_path: Path
) -> None:
    private = Path(admitted_revision.task.repository.private_path)
    private.mkdir()
    before = snapshot(checkout.path)
    exports.write_to_checkout(admitted_revision, private=True, by=Actor.member(maintainer))
    assert snapshot(checkout.path) == before
    assert json.loads((private / "tasks/fix_fraction_gt1/rubric.json").read_bytes()) == RUBRIC


def test_the_private_export_holds_everything_rubric_check_reads(
    admitted_revision: RubricRevision,
    checkout: GitRepo,
    maintainer: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Issue 7 §5: the held-out set lives only in the private path, so its export carries the task's own
    # files too; the public one stays rubric.json and calib diffs.
    task = admitted_revision.task
    private = Path(task.repository.private_path)
    private.mkdir()
    call_command("export_rubrics", "--repository", task.repository.name, "--private", stdout=io.StringIO())
    call_command("export_rubrics", "--repository", task.repository.name, stdout=io.StringIO())
    folder = private / "tasks" / task.task_id
    assert sorted(p.name for p in folder.iterdir()) == ["calib", "oracle.diff", "rubric.json", "task.json"]
    assert (folder / "oracle.diff").read_bytes() == ORACLE_DIFF
    assert json.loads((folder / "task.json").read_bytes())["base_commit"] == task.base_commit
    public = checkout.path / "tasks" / task.task_id
    assert (public / "rubric.json").exists() and not (public / "oracle.diff").exists()
    # The download: the same files in the private zip, none of them in the public one.
    with zipfile.ZipFile(
        io.BytesIO(exports.export_zip(admitted_revision, private=True, by=Actor.command_line()))
    ) as archive:
        names = set(archive.namelist())
    assert {f"tasks/{task.task_id}/{n}" for n in ("task.json", "oracle.diff", "rubric.json")} <= names
    with zipfile.ZipFile(
        io.BytesIO(exports.export_zip(admitted_revision, by=Actor.command_line()))
    ) as archive:
        assert f"tasks/{task.task_id}/oracle.diff" not in archive.namelist()
    # `rubric check` runs from the exported folder alone, the rubric named as a held-out one.
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps(sound_script()))
    manifest = tmp_path / "repo_manifest.yaml"
    manifest.write_text("{}\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    argv = ["check", str(folder), "--rubric", str(folder / "rubric.json"), "--manifest", str(manifest)]
    argv += ["--judge", f"scripted:{judge}", "--store", str(tmp_path / "store.sqlite"), "--json"]
    assert rubric_cli(argv) == 0


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(
    admitted_revision: RubricRevision, checkout: GitRepo, maintainer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = checkout.write("tasks/fix_fraction_gt1/rubric.json", "old rubric\n")

    def failing_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(ExportError, match="rubric.json: cannot write: disk full"):  # a clear error, not a 500
        exports.write_to_checkout(admitted_revision, by=Actor.member(maintainer))
    assert old.read_text() == "old rubric\n"
    assert not [p for p in old.parent.iterdir() if p.name.endswith(".tmp")]


def test_it_does_not_write_through_a_symlinked_task_directory(
    admitted_revision: RubricRevision, checkout: GitRepo, maintainer: Any, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (checkout.path / "tasks/fix_fraction_gt1/calib/old.diff").unlink()
    (checkout.path / "tasks/fix_fraction_gt1/task.json").unlink()
    (checkout.path / "tasks/fix_fraction_gt1/calib").rmdir()
    (checkout.path / "tasks/fix_fraction_gt1").rmdir()
    (checkout.path / "tasks/fix_fraction_gt1").symlink_to(outside)
    with pytest.raises(ExportError, match="leaves"):
        exports.write_to_checkout(admitted_revision, by=Actor.member(maintainer))
    assert list(outside.iterdir()) == []


def test_only_a_maintainer_exports_to_the_checkout(
    admitted_revision: RubricRevision, checkout: GitRepo, reviewer: Any
) -> None:
    with pytest.raises(PermissionDenied):
        exports.write_to_checkout(admitted_revision, by=Actor.member(reviewer))


# --- checkouts -------------------------------------------------------------------------------------------


def test_it_imports_every_task_of_a_checkout(
    repository: Repository, git_repo: GitRepo, maintainer: Any
) -> None:
    for task_id in ("fix_fraction_gt1", "second_task"):
        git_repo.write(f"tasks/{task_id}/rubric.json", json.dumps(rubric_data(task=task_id), indent=2))
        git_repo.write(f"tasks/{task_id}/task.json", json.dumps({"id": task_id, "prompt_style": "spec"}))
        git_repo.write(f"tasks/{task_id}/prompt.md", f"Prompt of {task_id}\n")
        for path, content in CALIBRATION_FILES.items():
            git_repo.write(f"tasks/{task_id}/{path}", content)
    git_repo.write("tasks/no_rubric_yet/task.json", "{}")
    created = imports.import_checkout(repository, git_repo.path, Actor.member(maintainer))
    assert [r.task.task_id for r in created] == ["fix_fraction_gt1", "second_task"]
    assert Task.objects.get(task_id="second_task").spec_prompt == "Prompt of second_task\n"
    approve_and_admit(created[1], maintainer)
    out = Path(str(git_repo.path) + "-export")
    out.mkdir()
    exports.write_many_to_checkout([created[1]], by=Actor.member(maintainer), root=out)
    assert (out / "tasks/second_task/rubric.json").read_text() == (
        git_repo.path / "tasks/second_task/rubric.json"
    ).read_text() + "\n"


def test_a_checkout_with_a_too_deeply_nested_rubric_lists_it(
    repository: Repository, git_repo: GitRepo, maintainer: Any
) -> None:
    git_repo.write("tasks/deep/rubric.json", "[" * 30_000 + "]" * 30_000)
    with pytest.raises(ImportFailed) as exc:
        imports.import_checkout(repository, git_repo.path, Actor.member(maintainer))
    assert problems_of(exc) == ["tasks/deep/rubric.json: malformed JSON: nested too deeply"]
    assert_nothing_imported()


def test_a_database_failure_halfway_rolls_back_every_task(
    repository: Repository, maintainer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    members = {
        f"tasks/{task_id}/{name}": data
        for task_id in ("fix_fraction_gt1", "second_task")
        for name, data in [
            ("rubric.json", json.dumps(rubric_data(task=task_id)).encode()),
            *CALIBRATION_FILES.items(),
        ]
    }
    real = revisions.create_revision
    calls: list[str] = []

    def fail_on_second(task: Task, *args: Any, **kwargs: Any) -> RubricRevision:
        calls.append(task.task_id)
        if len(calls) == 2:
            raise RuntimeError("database went away")
        return real(task, *args, **kwargs)

    monkeypatch.setattr(rubric_import, "create_revision", fail_on_second)
    with pytest.raises(RuntimeError):
        imports.import_rubric_zip(repository, upload(make_zip(members)), Actor.member(maintainer))
    assert calls == ["fix_fraction_gt1", "second_task"]  # the first one had been written
    assert_nothing_imported()
    assert not AuditEvent.objects.exists()


# --- §8: both prompt variants -----------------------------------------------------------------------------

SPEC_PROMPT = "Make Fraction.__gt__ return True when the fraction exceeds 1; keep the tests as they are."
ISSUE_PROMPT = "Fraction(3, 2) > 1 is False."


def test_both_prompt_variants_round_trip_through_import_and_export(
    repository: Repository, other_repository: Repository, maintainer: Any, outsider: Any, tmp_path: Path
) -> None:
    task_json = {"id": "fix_fraction_gt1", "prompts": {"spec": SPEC_PROMPT, "issue": ISSUE_PROMPT}}
    buffer = io.BytesIO(task_zip())
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr("tasks/fix_fraction_gt1/task.json", json.dumps(task_json))
        archive.writestr("tasks/fix_fraction_gt1/oracle.diff", ORACLE_DIFF)
    (revision,) = imports.import_rubric_zip(repository, upload(buffer.getvalue()), Actor.member(maintainer))
    task = Task.objects.get(pk=revision.task_id)
    assert (task.spec_prompt, task.issue_prompt) == (SPEC_PROMPT, ISSUE_PROMPT)
    assert "prompts" not in task.extra

    admitted = approve_and_admit(revision, maintainer)
    exported = exports.export_zip(admitted, private=True, by=Actor.command_line())
    with zipfile.ZipFile(io.BytesIO(exported)) as archive:
        (tmp_path / "task.json").write_bytes(archive.read("tasks/fix_fraction_gt1/task.json"))
    spec = load_task(tmp_path)
    assert spec.prompt_variants() == {"spec": SPEC_PROMPT, "issue": ISSUE_PROMPT}
    assert (spec.prompt, spec.prompt_style) == (SPEC_PROMPT, "spec")

    (again,) = imports.import_rubric_zip(other_repository, upload(exported), Actor.member(outsider))
    copy = Task.objects.get(pk=again.task_id)
    assert (copy.spec_prompt, copy.issue_prompt) == (SPEC_PROMPT, ISSUE_PROMPT)


def test_a_lone_prompt_leaves_the_other_variant_and_prompts_states_both(
    repository: Repository, maintainer: Any
) -> None:
    Task.objects.create(
        repository=repository, task_id="fix_fraction_gt1", spec_prompt=SPEC_PROMPT, issue_prompt=ISSUE_PROMPT
    )

    def import_task_json(task_json: dict[str, Any]) -> Task:
        buffer = io.BytesIO(task_zip())
        with zipfile.ZipFile(buffer, "a") as archive:
            archive.writestr("tasks/fix_fraction_gt1/task.json", json.dumps(task_json))
        (revision,) = imports.import_rubric_zip(
            repository, upload(buffer.getvalue()), Actor.member(maintainer)
        )
        return Task.objects.get(pk=revision.task_id)

    # A task.json of one `prompt` (every file before the variants) says nothing of the other variant.
    task = import_task_json({"id": "fix_fraction_gt1", "prompt": "New issue text.", "prompt_style": "issue"})
    assert (task.spec_prompt, task.issue_prompt) == (SPEC_PROMPT, "New issue text.")
    # `prompts` is the whole statement: a variant it leaves out is cleared.
    task = import_task_json({"id": "fix_fraction_gt1", "prompts": {"issue": ISSUE_PROMPT}})
    assert (task.spec_prompt, task.issue_prompt) == ("", ISSUE_PROMPT)


def test_bad_prompts_are_problems_naming_the_field_and_nothing_is_imported(
    repository: Repository, maintainer: Any
) -> None:
    task_json = {"id": "fix_fraction_gt1", "prompt": "other", "prompts": {"spec": SPEC_PROMPT, "isue": "x"}}
    buffer = io.BytesIO(task_zip())
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr("tasks/fix_fraction_gt1/task.json", json.dumps(task_json))
    with pytest.raises(ImportFailed) as caught:
        imports.import_rubric_zip(repository, upload(buffer.getvalue()), Actor.member(maintainer))
    assert [str(p) for p in caught.value.problems] == [
        "tasks/fix_fraction_gt1/task.json: prompts.isue: unknown key (did you mean 'issue'?)"
    ]
    assert not Task.objects.filter(repository=repository).exists()
