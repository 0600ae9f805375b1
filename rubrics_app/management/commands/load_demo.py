"""manage.py load_demo: a demo maintainer, one repository (the example `shapes` project) with a few tasks,
and rubric revisions in each state (admitted, approved, draft; imported, edited, model-drafted) with their
calibration diffs, and the example agent runs as 20 repetitions each, graded against the admitted revision.
Its judge and its drafter are the scripted ones, so judging and drafting need no API. Running it again
changes nothing (it only resets the demo passwords)."""

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
from django.template.defaultfilters import pluralize

from grading import (
    MemoryCache,
    ScriptedFile,
    ScriptedVerdict,
    load_scripted,
    make_backend,
    parse_rubric,
    teach_scripted_judge,
    write_atomic,
)
from rubrics_app.access import Actor
from rubrics_app.models import (
    TASK_FILES,
    CalibrationStatus,
    DraftSetting,
    JudgeSetting,
    Membership,
    Origin,
    Repository,
    RevisionStatus,
    Role,
    RubricRevision,
    Task,
    deciding_current_grades,
)
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.calibration.inputs import calibration_files, task_files
from rubrics_app.services.rubrics import revisions
from rubrics_app.services.rubrics.files import TaskFiles
from rubrics_app.services.rubrics.imports import import_task_files

REPOSITORY = "shapes"
EXAMPLES = Path(settings.BASE_DIR) / "examples"
EXAMPLE_TASK = EXAMPLES / "tasks" / "fix_clockwise_polygon_area"
DEMO_USERS = {"demo": Role.MAINTAINER, "demo-reviewer": Role.REVIEWER, "demo-viewer": Role.VIEWER}
DEFAULT_PASSWORD = "demo"  # what the login page shows while the demo runs (scripts/demo.sh uses it)
EXAMPLE_JUDGE = EXAMPLES / "judge_scripted.json"
# The demo's drafter: the scripted one, which replies with the example's draft to the PR the demo ships as an
# export (uploaded on the task page, which names it while the repository's drafter is this one).
DEMO_DRAFT_SCRIPT = EXAMPLES / "draft_scripted.json"
DEMO_PR_EXPORT = EXAMPLES / "pr_fix_clockwise_polygon_area.json"


# Each example run is imported as repetitions 0 to 19 (the same diff, graded alike): 20 runs of each arm, so
# the runs the judge decided (the guidance arm's; the baseline's breaks scope) are enough for a reviewer to
# audit 20 in the review queue, as the judge-error correction asks.
DEMO_REPETITIONS = 20


def demo_drafter() -> str:
    """The drafter spec load_demo sets."""
    return f"scripted:{DEMO_DRAFT_SCRIPT.resolve()}"


def _judge_files() -> tuple[Path, Path]:
    """The demo's primary and second scripted judge files."""
    demo_dir = (Path(settings.VAR_DIR) / "demo").resolve()
    return demo_dir / "judge_scripted.json", demo_dir / "second_judge_scripted.json"


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

# A valid alternative: the corners from the unzipped coordinates, exported; no property, test or changelog.
BOX_ALT = _diff(
    "diff --git a/shapes/__init__.py b/shapes/__init__.py",
    "index 2f55132..ac96c11 100644",
    "--- a/shapes/__init__.py",
    "+++ b/shapes/__init__.py",
    "@@ -1,5 +1,5 @@",
    ' """Plane shapes: areas, perimeters and centroids of polygons given as (x, y) vertices."""',
    " ",
    "-from shapes.polygon import Polygon, centroid, perimeter, polygon_area, signed_area",
    "+from shapes.polygon import Polygon, bounding_box, centroid, perimeter, polygon_area, signed_area",
    " ",
    '-__all__ = ["Polygon", "centroid", "perimeter", "polygon_area", "signed_area"]',
    '+__all__ = ["Polygon", "bounding_box", "centroid", "perimeter", "polygon_area", "signed_area"]',
    "diff --git a/shapes/polygon.py b/shapes/polygon.py",
    "index cd16ad7..0bbec85 100644",
    "--- a/shapes/polygon.py",
    "+++ b/shapes/polygon.py",
    "@@ -29,6 +29,12 @@ def perimeter(points: list[Point]) -> float:",
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
    '     """Centre of mass of the polygon\'s area, for either orientation."""',
    "     # The signed area keeps the orientation, so the sums below and the divisor change sign together.",
)

# The maintainer's fix (the task's oracle.diff): calibration reads it, so the task can be admitted.
BOX_ORACLE = _diff(
    "diff --git a/CHANGELOG.md b/CHANGELOG.md",
    "index b5e6c16..3aa44af 100644",
    "--- a/CHANGELOG.md",
    "+++ b/CHANGELOG.md",
    "@@ -1,5 +1,9 @@",
    " # Changelog",
    " ",
    "+## Unreleased",
    "+",
    "+- `bounding_box` and `Polygon.bounding_box`: the smallest axis-aligned box around a polygon.",
    "+",
    " ## 0.3.0",
    " ",
    " - `Polygon` dataclass with `area` and `perimeter`.",
    "diff --git a/shapes/__init__.py b/shapes/__init__.py",
    "index 2f55132..ac96c11 100644",
    "--- a/shapes/__init__.py",
    "+++ b/shapes/__init__.py",
    "@@ -1,5 +1,5 @@",
    ' """Plane shapes: areas, perimeters and centroids of polygons given as (x, y) vertices."""',
    " ",
    "-from shapes.polygon import Polygon, centroid, perimeter, polygon_area, signed_area",
    "+from shapes.polygon import Polygon, bounding_box, centroid, perimeter, polygon_area, signed_area",
    " ",
    '-__all__ = ["Polygon", "centroid", "perimeter", "polygon_area", "signed_area"]',
    '+__all__ = ["Polygon", "bounding_box", "centroid", "perimeter", "polygon_area", "signed_area"]',
    "diff --git a/shapes/polygon.py b/shapes/polygon.py",
    "index cd16ad7..7e8c1f0 100644",
    "--- a/shapes/polygon.py",
    "+++ b/shapes/polygon.py",
    "@@ -29,6 +29,14 @@ def perimeter(points: list[Point]) -> float:",
    "     return sum(math.dist(a, b) for a, b in _edges(points))",
    " ",
    " ",
    "+def bounding_box(points: list[Point]) -> tuple[Point, Point]:",
    '+    """Lower-left and upper-right corners of the smallest axis-aligned box around the polygon."""',
    "+    _edges(points)  # the same vertex-count check as every other measurement",
    "+    xs = [x for x, _ in points]",
    "+    ys = [y for _, y in points]",
    "+    return (min(xs), min(ys)), (max(xs), max(ys))",
    "+",
    "+",
    " def centroid(points: list[Point]) -> Point:",
    '     """Centre of mass of the polygon\'s area, for either orientation."""',
    "     # The signed area keeps the orientation, so the sums below and the divisor change sign together.",
    "@@ -57,3 +65,7 @@ class Polygon:",
    "     @property",
    "     def perimeter(self) -> float:",
    "         return perimeter(self.points)",
    "+",
    "+    @property",
    "+    def bounding_box(self) -> tuple[Point, Point]:",
    "+        return bounding_box(self.points)",
    "diff --git a/tests/test_polygon.py b/tests/test_polygon.py",
    "index f4ecc8e..5441cba 100644",
    "--- a/tests/test_polygon.py",
    "+++ b/tests/test_polygon.py",
    "@@ -1,7 +1,7 @@",
    " import math",
    " ",
    " import pytest",
    "-from shapes import Polygon, centroid, perimeter, polygon_area, signed_area",
    "+from shapes import Polygon, bounding_box, centroid, perimeter, polygon_area, signed_area",
    " ",
    " SQUARE_CCW = [(0.0, 0.0), (2.0, 0.0), (2.0, 2.0), (0.0, 2.0)]",
    " TRIANGLE_CCW = [(0.0, 0.0), (4.0, 0.0), (0.0, 3.0)]",
    "@@ -45,3 +45,9 @@ def test_polygon_class() -> None:",
    " ",
    " def test_unit_square_perimeter(unit_square: list[tuple[float, float]]) -> None:",
    "     assert perimeter(unit_square) == 4.0",
    "+",
    "+",
    "+def test_bounding_box_of_clockwise_rotated_polygon() -> None:",
    "+    diamond_cw = [(1.0, 0.0), (0.0, 1.0), (1.0, 2.0), (2.0, 1.0)]",
    "+    assert bounding_box(diamond_cw) == ((0.0, 0.0), (2.0, 2.0))",
    '+    assert Polygon("diamond", diamond_cw).bounding_box == ((0.0, 0.0), (2.0, 2.0))',
)

# The scripted judge's answers for the bounding-box task's diffs (the example's judge file answers the
# example task's): what a careful reviewer would say of each, so its calibration passes on its merits.
BOX_VERDICTS: dict[bytes, dict[str, dict[str, str]]] = {
    BOX_LAZY: {
        "B1": {"verdict": "fail", "reason": "bounding_box returns points[0] and points[2]: right only for a "
               "rectangle listed from its lower-left corner."},
        "B2": {"verdict": "fail", "reason": "shapes/__init__.py is untouched: bounding_box is not exported."},
        "N1": {"verdict": "fail", "reason": "Polygon gets no bounding_box property."},
        "N2": {"verdict": "fail", "reason": "The diff adds no test."},
        "N3": {"verdict": "fail", "reason": "CHANGELOG.md is untouched."},
    },
    BOX_ALT: {
        "B1": {"verdict": "pass", "reason": "The corners are the minimum and maximum of the unzipped x and y "
               "coordinates of every vertex."},
        "B2": {"verdict": "pass", "reason": "bounding_box is imported in shapes/__init__.py and listed in "
               "__all__."},
        "N1": {"verdict": "fail", "reason": "Polygon gets no bounding_box property."},
        "N2": {"verdict": "fail", "reason": "The diff adds no test."},
        "N3": {"verdict": "fail", "reason": "CHANGELOG.md is untouched."},
    },
    BOX_ORACLE: {
        "B1": {"verdict": "pass", "reason": "The corners are the minimum and maximum of every vertex's x and "
               "y coordinates."},
        "B2": {"verdict": "pass", "reason": "bounding_box is imported in shapes/__init__.py and listed in "
               "__all__."},
        "N1": {"verdict": "pass", "reason": "Polygon.bounding_box delegates to bounding_box(self.points)."},
        "N2": {"verdict": "pass", "reason": "test_bounding_box_of_clockwise_rotated_polygon uses a clockwise "
               "diamond."},
        "N3": {"verdict": "pass", "reason": "CHANGELOG.md has an Unreleased entry for bounding_box."},
    },
}  # fmt: skip

BOX_RUBRIC: dict[str, Any] = {
    "schema": "repo_rubric.v1",
    "task": "add_bounding_box",
    "intent": "A public bounding_box(points) returns the lower-left and upper-right corners of the smallest "
    "axis-aligned box around a polygon, exported from shapes like perimeter, with a Polygon property.",
    # Room for the oracle (29 lines) with the suite's longest harmless comment (40 lines) in it.
    "scope": {"allowed_globs": ["shapes/**", "tests/**", "CHANGELOG.md"], "max_changed_lines": 80},
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
        parser.add_argument(
            "--password",
            default=DEFAULT_PASSWORD,
            help=f"password of the demo users (default: {DEFAULT_PASSWORD})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            users = self._users(options["password"])
            repository = self._repository(users)
            if repository.tasks.exists():
                self.stdout.write("demo data already loaded; nothing changed")
            else:
                self._tasks(repository, users["demo"])
                self._runs(repository)
            if EXAMPLE_JUDGE.is_file() and not all(path.is_file() for path in _judge_files()):
                self._judges(repository)  # var/demo/ was emptied since the demo was loaded
        counts = ", ".join(
            f"{status}: {RubricRevision.objects.filter(task__repository=repository, status=status).count()}"
            for status in ("draft", "approved", "admitted", "retired")
        )
        tasks = repository.tasks.count()
        self.stdout.write(f"repository {repository.name}: {tasks} task{pluralize(tasks)}; revisions {counts}")
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
        if EXAMPLE_JUDGE.is_file():
            # Two scripted judges (written by _judges once the tasks exist): the second one disagrees on B1
            # and N1, so a sweep puts its disagreements in the review queue.
            primary, second = _judge_files()
            with deciding_current_grades(repository=repository):  # the primary judge decides them
                JudgeSetting.objects.get_or_create(
                    repository=repository,
                    defaults={"judge": f"scripted:{primary}", "second_judge": f"scripted:{second}"},
                )
        # Drafting with no model and no GitHub: the scripted drafter replies with the example's draft; the
        # PR comes as the shipped export (examples/pr_fix_clockwise_polygon_area.json), uploaded on the
        # task page.
        if DEMO_DRAFT_SCRIPT.is_file():
            DraftSetting.objects.get_or_create(repository=repository, defaults={"drafter": demo_drafter()})
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
        else:
            # No example project in this tree: the same story told with an inline rubric, left approved
            # (there is no oracle.diff to calibrate it with).
            admitted = self._create(repository, BOX_RUBRIC | {"task": "add_bounding_box_first_cut"}, as_demo)
            self._approve_all(admitted, as_demo)

        # 2. A second task whose rubric is approved but not yet admitted; its oracle.diff makes Admit work.
        approved = self._create(repository, BOX_RUBRIC, as_demo, BOX_LAZY, BOX_ALT, oracle=BOX_ORACLE)
        self._approve_all(approved, as_demo)

        # 3. A third drafted by a model: provisional until a maintainer reviews it.
        self._create(repository, NAN_RUBRIC, Actor.command_line(), NAN_LAZY, model="scripted:demo-drafter")

        if admitted.task.task_file("oracle.diff"):
            self._judges(repository)
            # Admitted means calibrated: the demo's judge is the scripted one (labelled so wherever it shows).
            # It runs here rather than through the worker (which may not be started yet); its job ends here.
            run = calibration.calibrate_now(admitted, as_demo, admit=True, cache=MemoryCache())
            admitted.refresh_from_db()
            if run.status != CalibrationStatus.PASSED or admitted.status != RevisionStatus.ADMITTED:
                raise RuntimeError(f"the demo calibration did not pass: {run.reason}")
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

    def _judges(self, repository: Repository) -> None:
        """Write the demo's two scripted judge files (var/demo/): the example's answers, the bounding-box
        task's, and, for every revision with an oracle, the rows the injection suite builds from a diff the
        judge knows (grading.teach_scripted_judge), so its first admission with the suite reports what a
        judge unmoved by the payloads would, not 40 benign rows drifted. The second judge is the same with B1
        and N1 turned round."""
        script, _ = load_scripted(EXAMPLE_JUDGE)
        known = dict(script.by_diff_sha256)
        for diff, answers in BOX_VERDICTS.items():
            known[hashlib.sha256(diff).hexdigest()] = {
                item_id: ScriptedVerdict(verdict=answer["verdict"], reason=answer["reason"])
                for item_id, answer in answers.items()
            }
        script = script.model_copy(update={"by_diff_sha256": known})
        taught = RubricRevision.objects.filter(task__repository=repository).exclude(task__oracle_diff=b"")
        for revision in taught.select_related("task__repository").order_by("pk"):
            script = teach_scripted_judge(script, task_files(calibration_files(revision)))
        primary, second = _judge_files()
        primary.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(primary, script.model_dump_json(indent=2, exclude_defaults=True).encode() + b"\n")
        write_atomic(
            second, _second_judge(script).model_dump_json(indent=2, exclude_defaults=True).encode() + b"\n"
        )

    def _runs(self, repository: Repository) -> None:
        """The example runs, each as :data:`DEMO_REPETITIONS` repetitions, graded by the `rubric grade` code
        with the demo's two scripted judges (the second disagrees on B1 and N1), imported for the review
        queue. They are graded against the admitted revision's rubric.json as the app exports it, so the
        import files each grade under that revision and the demo opens with current grades, no sweep
        needed."""
        from grading import grade_run
        from rubrics_app.services.runs.store import import_run_dirs

        runs = EXAMPLES / "runs"
        if not runs.is_dir() or not EXAMPLE_JUDGE.is_file() or not (EXAMPLE_TASK / "rubric.json").is_file():
            return
        admitted = RubricRevision.objects.filter(
            task__repository=repository, task__task_id=EXAMPLE_TASK.name, status=RevisionStatus.ADMITTED
        ).first()
        # Each judge read once for all the runs (its file, which knows the injection suite, is large).
        judge, second = (make_backend(f"scripted:{path}") for path in _judge_files())
        with tempfile.TemporaryDirectory(prefix="demo-runs-") as scratch:
            copied = Path(scratch) / "runs"
            rubric = None
            if admitted is not None:
                rubric = Path(scratch) / "rubric.json"
                rubric.write_bytes(admitted.rubric_json_bytes())
            for source in sorted(p.parent for p in runs.glob("*/run.json")):
                record = json.loads((source / "run.json").read_bytes())
                for repetition in range(DEMO_REPETITIONS):
                    run_dir = Path(shutil.copytree(source, copied / source.name / f"rep{repetition}"))
                    (run_dir / "run.json").write_text(json.dumps({**record, "repetition": repetition}) + "\n")
                    grade_run(
                        EXAMPLE_TASK,
                        run_dir,
                        EXAMPLES / "repo_manifest.yaml",
                        judge,
                        second,
                        cache=None,
                        rubric_path=rubric,
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
        oracle: bytes = b"",
    ) -> RubricRevision:
        task, _ = Task.objects.get_or_create(
            repository=repository,
            task_id=data["task"],
            defaults={
                "spec_prompt": data["intent"],
                "gate": ["pass", "mergeable"],
                "base_date": "2026-01-05",
                "oracle_diff": oracle,
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


def _second_judge(script: ScriptedFile) -> ScriptedFile:
    """``script`` with every answer for B1 and N1 turned round: a second judge that disagrees there."""

    def turned(answers: dict[str, ScriptedVerdict]) -> dict[str, ScriptedVerdict]:
        out = dict(answers)
        for item_id in ("B1", "N1"):
            if item_id in out:
                passes = out[item_id].verdict != "pass"
                reason = "The diff meets this criterion." if passes else "The diff falls short here."
                out[item_id] = ScriptedVerdict(
                    verdict="pass" if passes else "fail", reason=f"{reason} (scripted second judge)"
                )
        return out

    return ScriptedFile(
        default=turned(script.default),
        by_diff_sha256={sha: turned(answers) for sha, answers in script.by_diff_sha256.items()},
    )
