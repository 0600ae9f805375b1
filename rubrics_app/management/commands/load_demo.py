"""manage.py load_demo: a demo maintainer, one repository (the example `shapes` project) with a few tasks,
and rubric revisions in each state (admitted, approved, draft; imported, edited, model-drafted) with their
calibration diffs. Its judge and its drafter are the scripted ones, so judging and drafting need no API.
Running it again changes nothing (it only resets the demo passwords)."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from grading import MemoryCache, parse_rubric
from rubrics_app.access import Actor
from rubrics_app.models import (
    TASK_FILES,
    CalibrationStatus,
    DraftSetting,
    JudgeSetting,
    Membership,
    Origin,
    Repository,
    Role,
    RubricRevision,
    Task,
)
from rubrics_app.services import calibration, revisions
from rubrics_app.services.import_export import TaskFiles, import_task_files

REPOSITORY = "shapes"
EXAMPLES = Path(settings.BASE_DIR) / "examples"
EXAMPLE_TASK = EXAMPLES / "tasks" / "fix_clockwise_polygon_area"
DEMO_USERS = {"demo": Role.MAINTAINER, "demo-reviewer": Role.REVIEWER, "demo-viewer": Role.VIEWER}


def _diff(*lines: str) -> bytes:
    # Built line by line: a unified diff's blank context lines are a single space, which must survive editors.
    return ("\n".join(lines) + "\n").encode()


BOX_LAZY = _diff(
    "diff --git a/shapes/polygon.py b/shapes/polygon.py",
    "--- a/shapes/polygon.py",
    "+++ b/shapes/polygon.py",
    "@@ -29,4 +29,8 @@ def perimeter(points: list[Point]) -> float:",
    "     return sum(math.dist(a, b) for a, b in _edges(points))",
    " ",
    " ",
    "+def bounding_box(points: list[Point]) -> tuple[Point, Point]:",
    "+    return points[0], points[2]",
    "+",
    "+",
    " def centroid(points: list[Point]) -> Point:",
)

BOX_ALT = _diff(
    "diff --git a/shapes/polygon.py b/shapes/polygon.py",
    "--- a/shapes/polygon.py",
    "+++ b/shapes/polygon.py",
    "@@ -29,4 +29,10 @@ def perimeter(points: list[Point]) -> float:",
    "     return sum(math.dist(a, b) for a, b in _edges(points))",
    " ",
    " ",
    "+def bounding_box(points: list[Point]) -> tuple[Point, Point]:",
    '+    """Lower-left and upper-right corners of the smallest axis-aligned box around the polygon."""',
    "+    xs, ys = zip(*points, strict=True)",
    "+    return (min(xs), min(ys)), (max(xs), max(ys))",
    "+",
    "+",
    " def centroid(points: list[Point]) -> Point:",
)

BOX_RUBRIC: dict[str, Any] = {
    "schema": "repo_rubric.v1",
    "task": "add_bounding_box",
    "intent": "A public bounding_box(points) returns the lower-left and upper-right corners of the smallest "
    "axis-aligned box around a polygon, exported from shapes like perimeter, with a Polygon property.",
    "scope": {"allowed_globs": ["shapes/**", "tests/**", "CHANGELOG.md"], "max_changed_lines": 60},
    "blockers": [
        {
            "id": "B1",
            "criterion": "The corners are the minimum and maximum over every vertex, not taken from fixed "
            "positions such as points[0] and points[2].",
            "rationale": "The tests use one axis-aligned rectangle listed from its lower-left corner.",
            "evidence": "shapes/polygon.py:1 (vertices come in any order and orientation)",
        },
        {
            "id": "B2",
            "criterion": "bounding_box is exported from shapes/__init__.py and listed in __all__.",
            "evidence": "shapes/__init__.py:3-5",
        },
    ],
    "non_blockers": [
        {
            "id": "N1",
            "criterion": "Polygon gets a bounding_box property that delegates to the function.",
            "weight": 1,
        },
        {"id": "N2", "criterion": "A test covers a clockwise, rotated polygon.", "weight": 2},
        {"id": "N3", "criterion": "CHANGELOG.md mentions the new function.", "weight": 1},
    ],
    "hack_report": {
        "lazy_solution": "Return points[0] and points[2]: right for the test's rectangle only.",
        "alt_valid_solution": "Take min and max of the unzipped x and y coordinates.",
    },
    "calibration": {"lazy": [{"path": "calib/lazy.diff", "breaks": ["B1", "B2"]}], "alt": ["calib/alt.diff"]},
}

NAN_LAZY = _diff(
    "diff --git a/shapes/polygon.py b/shapes/polygon.py",
    "--- a/shapes/polygon.py",
    "+++ b/shapes/polygon.py",
    "@@ -22,3 +22,5 @@ def signed_area(points: list[Point]) -> float:",
    " def polygon_area(points: list[Point]) -> float:",
    '     """Area enclosed by the polygon."""',
    "+    if any(math.isnan(c) for p in points for c in p):",
    '+        raise ValueError("NaN vertex")',
    "     return signed_area(points)",
)

NAN_RUBRIC: dict[str, Any] = {
    "schema": "repo_rubric.v1",
    "task": "reject_non_finite_vertices",
    "intent": "A vertex with a NaN or infinite coordinate is a caller error: every measurement raises "
    "ValueError naming the vertex instead of returning nan.",
    "scope": {"allowed_globs": ["shapes/**", "tests/**"], "denied_globs": ["**/conftest.py"]},
    "blockers": [
        {
            "id": "B1",
            "criterion": "Every public measurement (signed_area, polygon_area, perimeter, centroid and the "
            "Polygon properties) rejects NaN and infinite coordinates, not polygon_area alone.",
            "rationale": "All of them read the vertices; the hidden test calls polygon_area only.",
            "evidence": "https://github.com/example/shapes/pull/3#discussion_r101",
        },
        {
            "id": "B2",
            "criterion": "Infinite coordinates are rejected as well as NaN.",
            "evidence": "shapes/polygon.py:11-14",
            "needs_tree": True,
        },
    ],
    "non_blockers": [
        {"id": "N1", "criterion": "The message names the offending vertex.", "weight": 1},
        {"id": "N2", "criterion": "One shared check, next to the vertex-count check in _edges.", "weight": 1},
        {"id": "N3", "criterion": "Tests cover NaN and inf for two different functions.", "weight": 2},
    ],
    "hack_report": {
        "lazy_solution": "Check math.isnan in polygon_area only: the hidden test passes, the rest still "
        "returns nan.",
        "alt_valid_solution": "Validate in _edges with math.isfinite, which every measurement calls.",
    },
    "calibration": {"lazy": ["calib/lazy.diff"]},
}


class Command(BaseCommand):
    help = "Load the demo: a maintainer login, the example repository, tasks and revisions in every state."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--password", default="demo", help="password of the demo users (default: demo)")

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            users = self._users(options["password"])
            repository = self._repository(users)
            if repository.tasks.exists():
                self.stdout.write("demo data already loaded; nothing changed")
            else:
                self._tasks(repository, users["demo"])
                self._runs(repository)
        counts = ", ".join(
            f"{status}: {RubricRevision.objects.filter(task__repository=repository, status=status).count()}"
            for status in ("draft", "approved", "admitted", "retired")
        )
        self.stdout.write(
            f"repository {repository.name}: {repository.tasks.count()} tasks; revisions {counts}"
        )
        self.stdout.write(self.style.SUCCESS(f"Demo login: demo / {options['password']} (maintainer)"))

    def _users(self, password: str) -> dict[str, User]:
        users = {}
        for username in DEMO_USERS:
            user, _ = User.objects.get_or_create(
                username=username, defaults={"email": f"{username}@example.com"}
            )
            user.set_password(password)
            user.save(update_fields=["password"])
            users[username] = user
        return users

    def _repository(self, users: dict[str, User]) -> Repository:
        demo_dir = Path(settings.VAR_DIR) / "demo"
        checkout = demo_dir / REPOSITORY
        private = demo_dir / f"{REPOSITORY}-heldout"
        private.mkdir(parents=True, exist_ok=True)
        if not checkout.exists():
            self._build_checkout(checkout)
        repository, created = Repository.objects.get_or_create(
            name=REPOSITORY,
            defaults={
                "checkout_path": str(checkout),
                "private_path": str(private),
                "guidance": "Keep public names and signatures. Fix every public path to a result, not only "
                "the one the issue names. Changelog entries go under Unreleased.",
            },
        )
        manifest = EXAMPLES / "repo_manifest.yaml"
        if created and manifest.is_file():
            from grading import load_manifest

            tests = load_manifest(manifest).tests
            if tests is not None:
                repository.tests_config = tests.model_dump(mode="json", by_alias=True, exclude_unset=True)
                repository.save(update_fields=["tests_config"])
        for username, role in DEMO_USERS.items():
            Membership.objects.get_or_create(
                repository=repository, user=users[username], defaults={"role": role}
            )
        script = EXAMPLES / "judge_scripted.json"
        if script.is_file():
            JudgeSetting.objects.get_or_create(
                repository=repository, defaults={"judge": f"scripted:{script.resolve()}"}
            )
        # Drafting with no model and no GitHub: the scripted drafter replies with the example's draft; the
        # PR comes as the shipped export (examples/pr_fix_clockwise_polygon_area.json), uploaded on the
        # task page.
        draft_script = EXAMPLES / "draft_scripted.json"
        if draft_script.is_file():
            DraftSetting.objects.get_or_create(
                repository=repository, defaults={"drafter": f"scripted:{draft_script.resolve()}"}
            )
        return repository

    def _build_checkout(self, checkout: Path) -> None:
        try:
            from examples.build import build_example_repo
        except ImportError:
            checkout.mkdir(parents=True)  # no example project here: exports still have somewhere to go
            return
        sha = build_example_repo(checkout)
        self.stdout.write(f"built the example checkout at {checkout} (base {sha[:12]})")

    def _tasks(self, repository: Repository, demo: User) -> None:
        as_demo = Actor.command_line(demo)
        # 1. The example task: imported, reviewed, admitted; then edited into a new draft under review.
        if (EXAMPLE_TASK / "rubric.json").is_file():
            files = {
                f"calib/{p.name}": p.read_bytes() for p in sorted((EXAMPLE_TASK / "calib").glob("*.diff"))
            }
            # The task's own files, which calibration reads beside the rubric.
            for name in TASK_FILES:
                if (EXAMPLE_TASK / name).is_file():
                    files[name] = (EXAMPLE_TASK / name).read_bytes()
            task_json = EXAMPLE_TASK / "task.json"
            source = TaskFiles(
                directory=f"tasks/{EXAMPLE_TASK.name}",
                rubric=(EXAMPLE_TASK / "rubric.json").read_bytes(),
                task_json=task_json.read_bytes() if task_json.is_file() else None,
                files=files,
            )
            (admitted,) = import_task_files(repository, [source], as_demo)
            self._approve_all(admitted, as_demo)
            # Admitted means calibrated: the demo's judge is the scripted one (labelled so wherever it shows).
            run = calibration.calibrate_now(admitted, as_demo, cache=MemoryCache())
            if run.status != CalibrationStatus.PASSED:
                raise RuntimeError(f"the demo calibration did not pass: {run.reason}")
            revisions.admit(admitted, by=as_demo)
        else:
            # No example project in this tree: the same story told with an inline rubric, left approved
            # (there is no oracle.diff to calibrate it with).
            admitted = self._create(repository, BOX_RUBRIC | {"task": "add_bounding_box_first_cut"}, as_demo)
            self._approve_all(admitted, as_demo)
        draft = revisions.new_draft_from(admitted, by=as_demo)
        items = {i.item_id: i for i in draft.ordered_items()}
        b1 = items["B1"]
        revisions.edit_item(
            b1,
            b1.version,
            {"criterion": b1.criterion + " The centroid of a clockwise polygon is unchanged."},
            as_demo,
        )
        revisions.approve_item(items["B2"], by=as_demo)
        revisions.request_changes(
            items["N2"], by=as_demo, note="Say what happens for a degenerate polygon too."
        )

        # 2. A second task whose rubric is approved but not yet admitted.
        approved = self._create(repository, BOX_RUBRIC, as_demo, BOX_LAZY, BOX_ALT)
        self._approve_all(approved, as_demo)

        # 3. A third drafted by a model: provisional until a maintainer reviews it.
        self._create(repository, NAN_RUBRIC, Actor.command_line(), NAN_LAZY, model="scripted:demo-drafter")

    def _runs(self, repository: Repository) -> None:
        """The example runs graded by the `rubric grade` code with two scripted judges (the example's, and a
        second that disagrees on B1 and N1), imported for the review queue."""
        from grading import grade_run
        from rubrics_app.services.runs import import_run_dirs

        runs, judge = EXAMPLES / "runs", EXAMPLES / "judge_scripted.json"
        if not runs.is_dir() or not judge.is_file() or not (EXAMPLE_TASK / "rubric.json").is_file():
            return
        second = Path(settings.VAR_DIR) / "demo" / "second_judge_scripted.json"
        script = json.loads(judge.read_text(encoding="utf-8"))
        for answers in [script.get("default", {}), *script.get("by_diff_sha256", {}).values()]:
            for item_id in ("B1", "N1"):
                if item_id in answers:
                    flipped = "fail" if answers[item_id]["verdict"] == "pass" else "pass"
                    reason = (
                        "The diff meets this criterion."
                        if flipped == "pass"
                        else "The diff falls short here."
                    )
                    answers[item_id] = {"verdict": flipped, "reason": f"{reason} (scripted second judge)"}
        second.write_text(json.dumps(script, indent=2), encoding="utf-8")
        with tempfile.TemporaryDirectory(prefix="demo-runs-") as scratch:
            copied = Path(shutil.copytree(runs, Path(scratch) / "runs"))
            for run_dir in sorted(p.parent for p in copied.glob("*/run.json")):
                grade_run(
                    EXAMPLE_TASK,
                    run_dir,
                    EXAMPLES / "repo_manifest.yaml",
                    f"scripted:{judge}",
                    f"scripted:{second}",
                    cache=None,
                )
            result = import_run_dirs(repository, copied, "examples/runs", Actor.command_line())
        self.stdout.write(f"agent runs: {result.summary()}")

    def _create(
        self,
        repository: Repository,
        data: dict[str, Any],
        by: Actor,
        lazy: bytes = BOX_LAZY,
        alt: bytes = BOX_ALT,
        model: str = "",
    ) -> RubricRevision:
        task, _ = Task.objects.get_or_create(
            repository=repository,
            task_id=data["task"],
            defaults={
                "spec_prompt": data["intent"],
                "gate": ["pass", "mergeable"],
                "base_date": "2026-01-05",
            },
        )
        rubric = parse_rubric(data)
        files = {"calib/lazy.diff": lazy, "calib/alt.diff": alt}
        needed = {path: files[path] for _, path in rubric.calibration.paths()}
        input_hash = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest() if model else ""
        return revisions.create_revision(
            task,
            rubric,
            needed,
            by=by,
            origin=Origin.MODEL if model else Origin.AUTHORED,
            model=model,
            input_hash=input_hash,
        )

    def _approve_all(self, revision: RubricRevision, by: Actor) -> None:
        for item in revision.ordered_items():
            outcome = revisions.approve_item(item, by=by)
        if not outcome.revision_approved:
            raise RuntimeError(f"demo revision {revision} did not validate: {outcome.errors}")
        revision.refresh_from_db()
