"""The report page: the same report as `rubric report --json` on the same runs, filters, role rules, the
training-cutoffs form, escaping in the SVG chart."""

from __future__ import annotations

import io
import json
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from rubrics_app.models import AgentRun, HumanVerdict, Repository, RunGrade, Task
from tests.app.report_helpers import build_runs, label_runs, rubric_report_json

pytestmark = pytest.mark.django_db

CUTOFFS = {"model-a": "2025-05-01"}


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def graded_repository(tmp_path: Path, repository: Repository) -> tuple[Repository, list[Path], Path]:
    run_dirs = build_runs(tmp_path, repository)
    label_runs(repository)
    repository.training_cutoffs = CUTOFFS
    repository.save()
    labels = tmp_path / "labels.json"
    call_command("export_labels", "--repository", repository.name, "--out", str(labels), stdout=io.StringIO())
    return repository, run_dirs, labels


def test_it_downloads_what_rubric_report_json_prints_on_the_same_runs(
    graded_repository: tuple[Repository, list[Path], Path], viewer: User, tmp_path: Path
) -> None:
    repository, run_dirs, labels = graded_repository
    cutoffs = tmp_path / "cutoffs.json"
    cutoffs.write_text(json.dumps(CUTOFFS))
    expected = rubric_report_json(
        run_dirs,
        "--tasks",
        str(tmp_path / "checkout" / "tasks"),
        "--cutoffs",
        str(cutoffs),
        "--labels",
        str(labels),
    )
    response = logged_in(viewer).get(reverse("rubrics:report_json", args=[repository.pk]))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="example-project-report.json"'
    got = json.loads(response.content)
    assert got.pop("provenance")["filters"] == {}
    assert got == expected
    # The data exercises what the page is for: labels enough for the correction, two judges, the split.
    assert got["judge_accuracy"]["labelled"] >= 20 and got["judge_accuracy"]["sensitivity"] is not None
    assert got["cells"][0]["corrected_mergeable_rate"] is not None
    assert got["disagreements"] and {c["split"] for c in got["by_contamination"]} == {
        "before_cutoff",
        "after_cutoff",
    }
    assert any(c["provisional"] for c in got["cells"])
    # grade.json's true/false metric as a rate, its number as a mean; integrity parts not measured counted.
    guidance = next(c for c in got["cells"] if c["arm"] == "guidance")
    assert guidance["metric_rates"]["own_tests_fail_on_base"] == {"rate": 0.75, "true": 9, "runs": 12}
    assert guidance["metrics"]["tests_added"] == {"mean": 1.5, "runs": 12}
    assert guidance["integrity_not_measured_runs"] == guidance["measured"] > 0


def _drawing(svg_file: str) -> str:
    """An .svg download's drawing, without its XML declaration and the provenance it carries."""
    drawing = svg_file.split("\n", 1)[1].strip()
    start, end = drawing.index("<metadata>"), drawing.index("</metadata>") + len("</metadata>")
    assert '"report_format"' in unescape(drawing[start:end])
    return drawing[:start] + drawing[end:]


@pytest.mark.parametrize(
    ("filters", "chosen"),
    [
        # The runs of the tasks posed as a spec (t_alpha, t_beta): the style is the task's.
        ({"prompt_style": "spec"}, lambda name: not name.startswith("t_gamma")),
        ({"arm": "plain", "model": "model-a"}, lambda name: "-plain-" in name),
    ],
)
def test_a_filtered_download_is_rubric_report_on_those_runs(
    graded_repository: tuple[Repository, list[Path], Path],
    viewer: User,
    tmp_path: Path,
    filters: dict[str, str],
    chosen: Any,
) -> None:
    repository, run_dirs, labels = graded_repository
    cutoffs = tmp_path / "cutoffs.json"
    cutoffs.write_text(json.dumps(CUTOFFS))
    subset = [d for d in run_dirs if chosen(d.name)]
    assert 0 < len(subset) < len(run_dirs)
    tasks = str(tmp_path / "checkout" / "tasks")
    expected = rubric_report_json(
        subset, "--tasks", tasks, "--cutoffs", str(cutoffs), "--labels", str(labels)
    )
    url = reverse("rubrics:report_json", args=[repository.pk])
    got = json.loads(logged_in(viewer).get(url, filters).content)
    assert got.pop("provenance")["filters"] == filters
    # The labels file names every labelled run; the command says it ignores those of the other runs.
    ignored = [w for w in expected["warnings"] if w.endswith("for runs not in this report: ignored")]
    assert len(ignored) == 1
    expected["warnings"].remove(ignored[0])
    assert got == expected
    assert got["cells"] and got["tasks"]


def test_the_csv_download_is_the_same_report(
    graded_repository: tuple[Repository, list[Path], Path], maintainer: User
) -> None:
    from grading.report.models import Report
    from grading.report.render import report_csv

    repository = graded_repository[0]
    client = logged_in(maintainer)
    data = json.loads(client.get(reverse("rubrics:report_json", args=[repository.pk])).content)
    response = client.get(reverse("rubrics:report_csv", args=[repository.pk]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    provenance, _, body = response.content.decode().partition("\n")
    assert body == report_csv(Report.model_validate(data))
    assert json.loads(provenance.removeprefix("# provenance ")) == data["provenance"] | {
        "generated_at": json.loads(provenance.removeprefix("# provenance "))["generated_at"]
    }


def test_filters_narrow_the_report(
    graded_repository: tuple[Repository, list[Path], Path], viewer: User
) -> None:
    repository = graded_repository[0]
    client = logged_in(viewer)
    url = reverse("rubrics:report_json", args=[repository.pk])
    full = json.loads(client.get(url).content)
    by_arm = json.loads(client.get(url, {"arm": "guidance"}).content)
    assert [c["arm"] for c in by_arm["cells"]] == ["guidance"]
    whole = next(c for c in full["cells"] if c["arm"] == "guidance")
    assert by_arm["cells"][0]["runs"] == whole["runs"] == 12
    assert by_arm["cells"][0]["mergeable_rate"]["value"] == whole["mergeable_rate"]["value"]
    by_task = json.loads(client.get(url, {"task": "t_beta", "model": "model-a"}).content)
    assert [t["task"] for t in by_task["tasks"]] == ["t_beta"]
    # t_gamma is posed as an issue only: the task's style applies to its runs.
    by_style = json.loads(client.get(url, {"prompt_style": "issue"}).content)
    assert [t["task"] for t in by_style["tasks"]] == ["t_gamma"]
    assert {c["prompt_style"] for c in by_style["by_prompt_style"]} == {"issue"}
    # The filter's label is words, not a squeezed field name.
    filters = client.get(reverse("rubrics:report", args=[repository.pk])).content.decode()
    assert "<label>prompt style" in filters and "promptstyle" not in filters
    nothing = json.loads(client.get(url, {"model": "no-such-model"}).content)
    assert nothing["cells"] == []
    page = client.get(reverse("rubrics:report", args=[repository.pk]), {"arm": "guidance"})
    assert page.status_code == 200
    assert b'href="/repos/%d/report.json?arm=guidance"' % repository.pk in page.content


def test_the_page_shows_the_report(
    graded_repository: tuple[Repository, list[Path], Path], viewer: User
) -> None:
    repository = graded_repository[0]
    page = logged_in(viewer).get(reverse("rubrics:report", args=[repository.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    # Warnings come first; provisional is said next to the number; the scripted judge is labelled.
    assert html.index('id="report-warnings"') < html.index('id="report-cells"')
    assert "provisional</span>" in html.split('id="report-cells"')[1].split("</table>")[0]
    assert '<span class="badge provisional">scripted</span>' in html
    assert 'class="report-chart rates-chart"' in html and 'class="report-chart report-histogram"' in html
    assert "before_cutoff" in html and "sensitivity" in html
    # grade.json's true/false metric as a share of true, never as a mean; integrity parts not measured.
    metrics = html.split('id="report-metrics"')[1].split("</ul>")[0]
    assert "guidance / model-a: <code>own_tests_fail_on_base</code> true in 75.0% (9 of 12 runs)" in metrics
    assert "<code>tests_added</code> = 1.5 (12 runs)" in metrics
    cells = html.split('id="report-cells"')[1].split("</table>")[0]
    assert (
        "Integrity not measured</th>" in cells
        and '<td>12 <span class="muted">(git_dir 12, test_cases 12, tests_skipped 12)</span></td>' in cells
    )
    # Disagreements link into the queue, at the pair's own screen.
    grade = RunGrade.objects.filter(
        run__task__task_id="t_alpha", run__arm="guidance", run__repetition=0
    ).get()
    assert reverse("rubrics:queue_entry", args=[repository.pk, grade.pk, "B1"]) + "?kind=judges" in html
    assert (
        reverse("rubrics:queue", args=[repository.pk]) + "?kind=judges&amp;task=t_alpha&amp;item=B1" in html
    )
    # The agreement table: the mergeable row, then a row per task and blocker, each with its κ and a link.
    data = json.loads(logged_in(viewer).get(reverse("rubrics:report_json", args=[repository.pk])).content)
    rows = html.split('id="report-agreement"')[1].split("<tbody>")[1].split("</tbody>")[0].split("</tr>")[:-1]
    assert len(rows) == 1 + len(data["agreement"]["items"]) > 1
    assert rows[0].strip().startswith("<tr><td>mergeable</td>") and ">review queue</a>" in rows[0]
    for row, (item, kappa) in zip(rows[1:], data["agreement"]["items"].items(), strict=True):
        assert f"<tr><td><code>{item}</code></td>" in row and ">in the queue</a>" in row
        shown = "undefined" if kappa["kappa"] is None else f"{kappa['kappa']:.3f}"
        assert shown in row.split("</td>")[1]
    detail = logged_in(viewer).get(reverse("rubrics:repository_detail", args=[repository.pk]))
    assert reverse("rubrics:report", args=[repository.pk]).encode() in detail.content


def test_a_new_label_changes_the_cached_report(
    graded_repository: tuple[Repository, list[Path], Path], viewer: User
) -> None:
    repository = graded_repository[0]
    client = logged_in(viewer)
    url = reverse("rubrics:report_json", args=[repository.pk])
    before = json.loads(client.get(url).content)["judge_accuracy"]
    HumanVerdict.objects.filter(verdict="fail").update(verdict="pass")
    after = json.loads(client.get(url).content)["judge_accuracy"]
    assert after["labelled"] == before["labelled"] and after != before


@pytest.mark.parametrize("name", ["report", "report_json", "report_csv"])
def test_roles_read_and_outsiders_get_404(
    repository: Repository, maintainer: User, reviewer: User, viewer: User, outsider: User, name: str
) -> None:
    url = reverse(f"rubrics:{name}", args=[repository.pk])
    for user in (maintainer, reviewer, viewer):
        assert logged_in(user).get(url).status_code == 200
    assert logged_in(outsider).get(url).status_code == 404
    assert Client().get(url).status_code == 302  # to the login page


def test_maintainers_edit_the_cutoffs(
    repository: Repository, maintainer: User, reviewer: User, admitted_revision: Any
) -> None:
    # A repository holding an admitted revision is frozen against deletion, not against its settings.
    url = reverse("rubrics:report_cutoffs", args=[repository.pk])
    assert logged_in(reviewer).post(url, {"cutoffs": json.dumps(CUTOFFS)}).status_code == 403
    response = logged_in(maintainer).post(url, {"cutoffs": '{"model-a": "2025-05-01T10:00:00"}'})
    assert response.status_code == 302
    repository.refresh_from_db()
    assert repository.training_cutoffs == {"model-a": "2025-05-01"}
    page = logged_in(maintainer).get(reverse("rubrics:report", args=[repository.pk]))
    assert "2025-05-01" in page.content.decode()
    assert logged_in(maintainer).post(url, {"cutoffs": "  "}).status_code == 302
    repository.refresh_from_db()
    assert repository.training_cutoffs is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"model-a": "May 2025"}', "cutoffs: model-a: &#x27;May 2025&#x27; is not a date (YYYY-MM-DD)"),
        ('{"model-a": "2025-05-01", "model-a": "2025-06-01"}', "duplicate key"),
        ('["model-a"]', "expected a JSON object"),
        ("{", "malformed JSON"),
        ('{"": "2025-05-01"}', "a model id is printable text"),
    ],
)
def test_bad_cutoffs_are_a_form_error_and_nothing_is_saved(
    repository: Repository, maintainer: User, text: str, message: str
) -> None:
    repository.training_cutoffs = CUTOFFS
    repository.save()
    response = logged_in(maintainer).post(
        reverse("rubrics:report_cutoffs", args=[repository.pk]), {"cutoffs": text}, follow=True
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    repository.refresh_from_db()
    assert repository.training_cutoffs == CUTOFFS


HOSTILE = '<script>alert("x")</script>&"\''


def test_hostile_names_are_escaped_in_the_chart_and_tables(
    tmp_path: Path, repository: Repository, viewer: User
) -> None:
    from tests.app.report_rows import bulk_runs

    task = Task.objects.create(repository=repository, task_id=f"t{HOSTILE}", spec_prompt="x")
    other = Task.objects.create(repository=repository, task_id="t2", spec_prompt="x")
    bulk_runs(
        [task, other],
        arms=[f"arm{HOSTILE}", "base"],
        models=[f"claude-{HOSTILE}</svg><svg onload=alert(1)>"],
        reps=3,
    )
    page = logged_in(viewer).get(reverse("rubrics:report", args=[repository.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "<script>alert" not in html and "<svg onload" not in html
    chart = html.split('class="report-chart rates-chart"')[1].split("</svg>")[0]
    assert "arm&lt;script&gt;alert(&quot;x&quot;)" in chart
    assert html.count('class="report-chart report-histogram"') == 2
    forest = html.split('class="report-chart forest-plot"')[1].split("</svg>")[0]
    assert "arm&lt;script&gt;alert(&quot;x&quot;)" in forest
    assert (
        "<title>Failed blockers of t&lt;script&gt;alert(&quot;x&quot;)"
        "&lt;/script&gt;&amp;&quot;&#x27;</title>" in html
    )
    assert AgentRun.objects.count() == 12


def test_a_cutoff_that_is_not_a_date_is_left_out_with_a_warning(
    tmp_path: Path, repository: Repository, viewer: User
) -> None:
    from tests.app.report_rows import bulk_runs

    tasks = [
        Task.objects.create(repository=repository, task_id=f"t{i}", base_date="2025-03-01") for i in (1, 2)
    ]
    bulk_runs(tasks, ["a"], ["m1", "m2"], 3)
    # Written around the form (the admin, a shell): the page still renders.
    repository.training_cutoffs = {"m1": "2025-01-01", "m2": "soon"}
    repository.save()
    data = json.loads(logged_in(viewer).get(reverse("rubrics:report_json", args=[repository.pk])).content)
    assert {(c["model"], c["split"]) for c in data["by_contamination"]} == {
        ("m1", "after_cutoff"),
        ("m2", "unknown"),
    }
    assert (
        "training cutoffs: m2: 'soon' is not a date (YYYY-MM-DD): left out of the contamination split"
        in (data["warnings"])
    )
    AgentRun.objects.create(
        task=tasks[0], arm="a", model="m1", repetition=9, passed=True, diff_sha256="0" * 64, diff_bytes=0
    )
    page = logged_in(viewer).get(reverse("rubrics:report", args=[repository.pk])).content.decode()
    assert "&#x27;soon&#x27; is not a date" in page.split('id="report-warnings"')[1].split("</section>")[0]
    assert "1 run has no grade yet" in page and "1 run not graded yet, left out" in page


def test_the_page_lists_the_first_disagreements_and_points_to_the_rest(
    repository: Repository, viewer: User
) -> None:
    from rubrics_app.views.report import MAX_DISAGREEMENTS_SHOWN
    from tests.app.report_rows import bulk_runs

    tasks = [
        Task.objects.create(repository=repository, task_id=f"t{i:02d}", spec_prompt="x") for i in range(40)
    ]
    bulk_runs(tasks, ["a"], ["m"], 12)  # the second judge disagrees on N1 of 6 runs per task: 240
    page = logged_in(viewer).get(reverse("rubrics:report", args=[repository.pk])).content.decode()
    table = page.split('id="report-disagreements"')[1].split("</table>")[0]
    assert table.count("<tr>") - 1 == MAX_DISAGREEMENTS_SHOWN
    assert f"240 item disagreements between the two judges (the first {MAX_DISAGREEMENTS_SHOWN} here" in page


def test_repeated_warnings_are_one_line_each_on_the_page_and_every_one_in_the_json(
    repository: Repository, viewer: User
) -> None:
    from tests.app.report_rows import bulk_runs

    tasks = [
        Task.objects.create(repository=repository, task_id=f"t{i:02d}", spec_prompt="x") for i in range(30)
    ]
    bulk_runs(tasks, ["a", "b"], ["claude-x", "gpt-y"], 2)  # 2 runs per task, arm and model: 120 warnings
    client = logged_in(viewer)
    warnings = json.loads(client.get(reverse("rubrics:report_json", args=[repository.pk])).content)[
        "warnings"
    ]
    repetition = [w for w in warnings if "measured runs; use at least 5 (two arms are compared)" in w]
    assert len(repetition) == 120
    page = client.get(reverse("rubrics:report", args=[repository.pk])).content.decode()
    section = page.split('id="report-warnings"')[1].split("</section>")[0]
    assert f"<strong>{len(warnings)} warnings</strong>" in section
    top = section.split("<details>")[0]  # what shows before any list is opened
    assert "measured runs; use at least" not in top
    assert (
        "<summary>120 task, arm and model groups with fewer measured runs than they need</summary>" in section
    )
    # Every warning is on the page, escaped, once (folded or not).
    for warning in warnings:
        text = warning.replace("&", "&amp;").replace("'", "&#x27;").replace('"', "&quot;")
        assert section.count(f"<li>{text}</li>") == 1, warning
    # And the two self-preference warnings (each judge judges runs of its own vendor's model) fold too.
    assert section.count("<details>") == 2 and "<summary>2 judge and model pairs where" in section


def test_a_kind_said_once_is_not_folded() -> None:
    from rubrics_app.views.report import warning_lines

    once = "task 't1', arm 'a', model 'm': 2 measured runs; use at least 3 (mergeable rates spread)"
    twice = [f"arm {arm!r}, model 'm': one task only, so no interval (tasks are resampled)" for arm in "ab"]
    lines = warning_lines(["first", twice[0], once, twice[1], "last"])
    assert lines == [
        ("first", []),
        ("2 arm and model cells with one task only, so no interval (tasks are resampled)", twice),
        (once, []),
        ("last", []),
    ]


# --- contrasts, figures and the self-contained file (issue 22) --------------------------------------------


def test_contrasts_come_first_as_a_forest_plot_with_their_table_and_figure_downloads(
    make_revision: Any, viewer: User
) -> None:
    from rubrics_app.models import RevisionStatus, RubricItem
    from tests.app.report_rows import bulk_runs

    revision = make_revision(RevisionStatus.DRAFT)
    task = revision.task
    other = Task.objects.create(repository=task.repository, task_id="t_other", spec_prompt="x")
    bulk_runs([task, other], ["base", "guided"], ["m1"], 3)
    client = logged_in(viewer)
    url = reverse("rubrics:report", args=[task.repository_id])
    html = client.get(url).content.decode()
    assert html.index('id="forest-plot"') < html.index('id="report-cells"')
    forest = html.split('id="forest-plot"')[1].split("</figure>")[0]
    assert 'class="report-chart forest-plot"' in forest and "guided − base (model m1)" in forest
    table, notes = html.split('id="report-contrasts"')[1].split("</table>")[:2]
    # One row for the pair, its three rates as columns (issue 35). Every task gives the same runs in both
    # arms: no spread, never "within ±5 pp" (issue 31), said once under the table.
    assert table.count("<tr>") == 1 + 1 and "2 (few tasks)" in table
    assert "no spread between tasks" in notes.lower()
    assert "within ±5 pp" not in table

    # Each chart downloads as an .svg file of its own: the page's drawing.
    figure = reverse("rubrics:report_figure", args=[task.repository_id])
    svg = client.get(figure, {"figure": "contrasts"})
    assert svg.status_code == 200 and svg["Content-Type"].startswith("image/svg+xml")
    body = svg.content.decode()
    assert body.startswith("<?xml") and _drawing(body) in forest
    assert f'href="{figure}?figure=contrasts" download' in html.replace("&amp;", "&")
    # So do the rates chart and each task's histogram, each from its own link.
    for query in ({"figure": "rates"}, {"figure": "blockers", "task_histogram": task.task_id}):
        assert f'href="{figure}?{urlencode(query)}" download' in html.replace("&amp;", "&")
        drawing = client.get(figure, query)
        assert drawing.status_code == 200 and _drawing(drawing.content.decode()) in html
    histogram = client.get(figure, {"figure": "blockers", "task_histogram": task.task_id})
    # The histogram names each blocker's criterion (from the task's rubric), on the page and in the file.
    criterion = RubricItem.objects.get(revision=revision, item_id="B1").criterion
    assert f"B1: {criterion}"[:40] in histogram.content.decode()
    assert f"B1: {criterion}"[:40] in html
    assert client.get(figure, {"figure": "nothing"}).status_code == 404
    assert client.get(figure, {"figure": "blockers", "task_histogram": "t_none"}).status_code == 404


def test_a_rate_without_an_interval_says_why(make_revision: Any, viewer: User) -> None:
    from rubrics_app.models import RevisionStatus
    from tests.app.report_rows import bulk_runs

    task = make_revision(RevisionStatus.DRAFT).task
    bulk_runs([task], ["base"], ["m1"], 3)
    html = logged_in(viewer).get(reverse("rubrics:report", args=[task.repository_id])).content.decode()
    cells = html.split('id="report-cells"')[1].split("</table>")[0]
    assert cells.count("no interval: one task only: nothing to resample") == 3  # test-pass, mergeable, gap
    chart = html.split('class="report-chart rates-chart"')[1].split("</svg>")[0]
    assert "no interval: one task only" in chart


def test_the_html_download_is_one_self_contained_file(make_revision: Any, viewer: User) -> None:
    from grading.report.html import render_report_html
    from grading.report.models import Report
    from grading.report.provenance import Provenance
    from rubrics_app.models import RevisionStatus
    from tests.app.report_rows import bulk_runs

    task = make_revision(RevisionStatus.DRAFT).task
    other = Task.objects.create(repository=task.repository, task_id="t_other", spec_prompt="x")
    bulk_runs([task, other], ["base", "guided"], ["m1", "m2"], 3)
    client = logged_in(viewer)
    page = client.get(reverse("rubrics:report", args=[task.repository_id]), {"model": "m1"}).content.decode()
    link = reverse("rubrics:report_html", args=[task.repository_id]) + "?model=m1"
    assert f'href="{link}"' in page  # the page links to the file for its filters
    response = client.get(link)
    assert response["Content-Type"].startswith("text/html")
    assert "attachment" in response["Content-Disposition"]
    body = response.content.decode()
    assert "<script" not in body and "<link" not in body and "src=" not in body and "url(" not in body
    assert body.index('id="contrasts"') < body.index("Per arm and model")
    assert body.count("<svg") == 4  # forest plot, rates, a histogram per task
    data = json.loads(
        client.get(reverse("rubrics:report_json", args=[task.repository_id]), {"model": "m1"}).content
    )
    assert {(c["kind"], c["fixed"]) for c in data["contrasts"]} == {("arm", "m1")}
    # The same file as grading renders for the same report (criteria from the rubric).
    # Its provenance is the JSON's, made at its own time.
    meta = body.split('<meta name="provenance" content="')[1].split('"')[0]
    provenance = Provenance.model_validate_json(unescape(meta))
    assert provenance.model_dump(exclude={"generated_at"}) == {
        k: v for k, v in data["provenance"].items() if k != "generated_at"
    }
    assert provenance.filters == {"model": "m1"} and response["Content-Disposition"].endswith(
        f'filename="{task.repository.name}-report-model-m1.html"'
    )
    assert body == render_report_html(
        Report.model_validate(data),
        title=f"Mergeability report · {task.repository.name}",
        criteria={task.task_id: {"B1": task.revisions.get().items.get(item_id="B1").criterion}},
        provenance=provenance,
    )


def test_the_queue_shows_how_many_labels_reach_five_points(
    graded_repository: tuple[Repository, list[Path], Path], viewer: User
) -> None:
    repository = graded_repository[0]
    client = logged_in(viewer)
    queue = reverse("rubrics:queue", args=[repository.pk])
    # Before any report is cached the queue computes the target alone (no bootstrap), then from the report.
    first = client.get(queue).content.decode().split('id="label-target">')[1].split("</span>")[0]
    cache.clear()
    data = json.loads(client.get(reverse("rubrics:report_json", args=[repository.pk])).content)
    target = data["label_target"]
    assert target["labelled"] > 0
    html = client.get(queue).content.decode()
    line = html.split('id="label-target">')[1].split("</span>")[0]
    assert line == first
    if target["more_labels"]:
        assert f"Label {target['more_labels']} more run" in line and "±5 pp" in line
    else:
        assert "±5 pp" in line
