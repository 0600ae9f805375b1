"""The report page's runs and items downloads and the provenance of every download (§7): a researcher
reproduces every cell rate of the page from the runs file, the files name their filter and the code's commit,
and ``rubric report --runs-out/--items-out`` writes the same rows from the run folders."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from grading import (
    GradedRun,
    ItemRow,
    Provenance,
    RunRow,
    build_report,
    code_version,
    read_rows,
)
from rubrics_app.models import AgentRun, HumanVerdict, Repository
from tests.app.client_helpers import logged_in
from tests.app.report_helpers import ROOT, build_runs, label_runs


@pytest.fixture
def graded(tmp_path: Path, repository: Repository) -> tuple[Repository, list[Path]]:
    run_dirs = build_runs(tmp_path, repository)
    label_runs(repository)
    return repository, run_dirs


def _download(client: Client, name: str, repository: Repository, fmt: str, filters: dict[str, str]) -> Any:
    response = client.get(reverse(f"rubrics:report_{name}", args=[repository.pk, fmt]), filters)
    assert response.status_code == 200
    return response


def _graded_run(row: RunRow) -> GradedRun:
    """What the report counts of a run, from its row alone."""
    return GradedRun(
        run=row.run, task=row.task, arm=row.arm, model=row.model, prompt_style=row.prompt_style,
        status=row.status, test_pass=row.test_pass, mergeable=row.mergeable, merge_score=row.merge_score,
    )  # fmt: skip


@pytest.mark.parametrize("filters", [{"arm": "guidance"}, {"prompt_style": "spec"}, {}])
def test_the_runs_file_reproduces_every_cell_rate_of_the_page(
    graded: tuple[Repository, list[Path]], viewer: User, filters: dict[str, str]
) -> None:
    repository = graded[0]
    client = logged_in(viewer)
    page = client.get(reverse("rubrics:report_json", args=[repository.pk]), filters)
    report = page.json()
    runs_file = _download(client, "runs", repository, "csv", filters)
    suffix = "".join(f"-{k.replace('_', '-')}-{v}" for k, v in filters.items())
    assert runs_file["Content-Disposition"] == f'attachment; filename="{repository.name}-runs{suffix}.csv"'
    assert page["Content-Disposition"] == f'attachment; filename="{repository.name}-report{suffix}.json"'
    provenance, rows = read_rows(b"".join(runs_file.streaming_content).decode(), RunRow)
    # The file names its filter and the code's commit, and the page's bootstrap.
    assert provenance.filters == filters == report["provenance"]["filters"]
    assert provenance.commit == code_version()[1] and provenance.commit is not None
    assert (provenance.bootstrap, provenance.seed, provenance.report_format) == (
        report["bootstrap"],
        report["seed"],
        report["format"],
    )
    assert len(rows) == sum(c["runs"] for c in report["cells"])
    # Every cell's rates (point and interval) from the rows, with the report's own computation.
    again = build_report([_graded_run(r) for r in rows], bootstrap=report["bootstrap"], seed=report["seed"])
    for mine, page_cells in (
        (again.cells, report["cells"]),
        (again.by_prompt_style, report["by_prompt_style"]),
    ):
        assert len(mine) == len(page_cells) > 0
        for cell, expected in zip(mine, page_cells, strict=True):
            assert (cell.arm, cell.model, cell.prompt_style) == (
                expected["arm"],
                expected["model"],
                expected["prompt_style"],
            )
            assert (cell.runs, cell.measured) == (expected["runs"], expected["measured"])
            for rate in ("test_pass_rate", "mergeable_rate", "difference"):
                assert getattr(cell, rate).model_dump(mode="json") == expected[rate]
    # And by hand, the pooled share of the measured runs of each cell.
    for expected in report["cells"]:
        measured = [
            r for r in rows if r.arm == expected["arm"] and r.model == expected["model"] and r.measured
        ]
        assert len(measured) == expected["measured"]
        assert all(r.excluded is None for r in measured)


def test_items_carry_each_judges_verdicts_and_the_human_labels_beside(
    graded: tuple[Repository, list[Path]], viewer: User
) -> None:
    repository = graded[0]
    client = logged_in(viewer)
    response = _download(client, "items", repository, "jsonl", {"arm": "plain"})
    assert response["Content-Disposition"].endswith('filename="example-project-items-arm-plain.jsonl"')
    provenance, items = read_rows(b"".join(response.streaming_content).decode(), ItemRow)
    assert provenance.filters == {"arm": "plain"} and {j.role for j in provenance.judges} == {
        "primary",
        "second",
    }
    assert {i.arm for i in items} == {"plain"}
    assert {i.role for i in items} == {"primary", "second"}
    primary_b1 = [i for i in items if i.role == "primary" and i.item_id == "B1"]
    assert primary_b1 and all(i.reason and i.judge.startswith("scripted:") for i in primary_b1)
    # The human labels as the queue stored them, beside the item they label.
    labelled: dict[tuple[str, int | None], str] = {
        (h.run.task.task_id, h.run.repetition): h.verdict
        for h in HumanVerdict.objects.filter(run__arm="plain", item_id="B1").select_related("run__task")
    }
    assert labelled
    for item in primary_b1:
        assert item.human_label == labelled.get((item.task, item.repetition))
    # The CSV holds the same rows.
    csv_items = read_rows(
        b"".join(_download(client, "items", repository, "csv", {"arm": "plain"}).streaming_content).decode(),
        ItemRow,
    )[1]
    assert csv_items == items


def test_rubric_report_writes_the_same_rows_from_the_run_folders(
    graded: tuple[Repository, list[Path]], viewer: User, tmp_path: Path
) -> None:
    repository, run_dirs = graded
    runs_out, items_out = tmp_path / "runs.jsonl", tmp_path / "items.csv"
    done = subprocess.run(
        [sys.executable, "-m", "grading", "report", "--json", "--tasks", str(tmp_path / "checkout" / "tasks"),
         "--runs-out", str(runs_out), "--items-out", str(items_out), *map(str, run_dirs)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cli_provenance, cli_runs = read_rows(runs_out.read_text(), RunRow)
    cli_items = read_rows(items_out.read_text(), ItemRow)[1]
    assert cli_provenance == Provenance.model_validate(json.loads(done.stdout)["provenance"])
    client = logged_in(viewer)
    app_runs = read_rows(
        b"".join(_download(client, "runs", repository, "csv", {}).streaming_content).decode(), RunRow
    )[1]
    app_items = read_rows(
        b"".join(_download(client, "items", repository, "csv", {}).streaming_content).decode(), ItemRow
    )[1]

    # The same columns and values; what only the app knows (the revision's number, the human verdicts)
    # and the run's name (the folder as given, the folder as imported) aside.
    def key(row: RunRow | ItemRow) -> tuple[Any, ...]:
        return (row.task, row.arm, row.model, row.repetition)

    aside = {"run", "rubric_revision", "human_mergeable", "human_label"}
    assert len(cli_runs) == len(app_runs) == len(run_dirs)
    assert sorted((r.model_dump(exclude=aside) for r in cli_runs), key=str) == sorted(
        (r.model_dump(exclude=aside) for r in app_runs), key=str
    )
    assert sorted(((key(i), i.model_dump(exclude=aside)) for i in cli_items), key=str) == sorted(
        ((key(i), i.model_dump(exclude=aside)) for i in app_items), key=str
    )
    assert any(r.rubric_sha256 for r in cli_runs) and all(r.primary_judge for r in cli_runs if r.test_pass)


def test_a_cell_links_to_its_runs_and_a_run_page_shows_its_diff_with_the_cited_lines(
    graded: tuple[Repository, list[Path]], viewer: User
) -> None:
    repository = graded[0]
    client = logged_in(viewer)
    page = client.get(reverse("rubrics:report", args=[repository.pk]), {"task": "t_alpha"}).content.decode()
    base = reverse("rubrics:report_runs", args=[repository.pk, "csv"])
    link = f"{base}?task=t_alpha&amp;arm=plain&amp;model=model-a"
    assert f'href="{link}"' in page
    response: Any = client.get(link.replace("&amp;", "&"))
    rows = read_rows(b"".join(response.streaming_content).decode(), RunRow)[1]
    assert {(r.task, r.arm, r.model) for r in rows} == {("t_alpha", "plain", "model-a")} and len(rows) == 4

    # The run page: the diff, the primary judge's cited line (new line 2) and the second's (new line 3).
    run = AgentRun.objects.get(task__task_id="t_alpha", arm="plain", repetition=0)
    html = client.get(reverse("rubrics:run_detail", args=[repository.pk, run.pk])).content.decode()
    diff = html.split('<h2 id="diff">Diff</h2>')[1]
    assert diff.count('class="diff-add cited cited-primary"') == 1
    assert diff.count('class="diff-add cited cited-second"') == 1
    assert html.index('id="current-grade"') < html.index('<h2 id="diff">')


@pytest.mark.parametrize("filters", [{}, {"arm": "plain"}])
def test_rubric_report_on_the_exported_run_folders_is_the_pages_report(
    graded: tuple[Repository, list[Path]], viewer: User, tmp_path: Path, filters: dict[str, str]
) -> None:
    repository = graded[0]
    repository.training_cutoffs = {"model-a": "2025-05-01"}
    repository.save()
    client = logged_in(viewer)
    page = client.get(reverse("rubrics:report_json", args=[repository.pk]), filters).json()
    response = client.get(reverse("rubrics:report_export", args=[repository.pk]), filters)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    suffix = "".join(f"-{k}-{v}" for k, v in filters.items())
    assert response["Content-Disposition"] == f'attachment; filename="{repository.name}-runs{suffix}.zip"'
    folder = tmp_path / "export"
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        archive.extractall(folder)
    assert json.loads((folder / "provenance.json").read_text())["filters"] == filters
    runs = sorted((folder / "runs").iterdir())
    assert len(runs) == sum(c["runs"] for c in page["cells"])
    done = subprocess.run(
        [sys.executable, "-m", "grading", "report", "--json", "--tasks", str(folder / "tasks"),
         "--labels", str(folder / "labels.json"), "--cutoffs", str(folder / "cutoffs.json"), *map(str, runs)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stdout)
    # Everything but when it was made and the runs' names (the folders in the zip, the folders imported).
    for report in (page, files):
        report.pop("provenance")
        report["disagreements"] = sorted(
            ({k: v for k, v in d.items() if k != "run"} for d in report.pop("disagreements")), key=str
        )
    assert page["judge_accuracy"]["labelled"] > 0 and page["by_contamination"]
    assert files == page
