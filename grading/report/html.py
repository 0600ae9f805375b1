"""A :class:`~grading.report.build.Report` as one self-contained HTML file: ``rubric report --html OUT.html``
and the report page's "HTML" download write the same bytes for the same report.

Everything is inline (the style sheet, the SVG charts of :mod:`grading.report.charts`), nothing is loaded
from elsewhere, so the file can be attached to a paper's supplement and read offline. The sections follow
the page: warnings, contrasts (forest plot first), the cells, judges, agreement and the failed blockers.
Every name (tasks, arms, models, blocker ids and criteria, warnings) is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from grading.report.agreement import Agreement
from grading.report.charts import blocker_histogram, forest_plot, rates_chart
from grading.report.models import Cell, ContaminationCell, Report
from grading.report.provenance import Provenance
from grading.report.render import (
    INTERVALS_TEXT,
    METRIC_NAMES,
    NO_LABEL_RESAMPLE,
    Notes,
    contrast_table,
    corrected_contrast_label,
    corrected_contrast_text,
    labels_weighting_text,
    left_out_text,
    metric_lines,
    no_interval_reason,
)
from grading.report.stats import Estimate
from grading.words import counted

_STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827; margin: 0; }
main { max-width: 1200px; margin: 0 auto; padding: 1rem 1.25rem 3rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
.muted { color: #4b5563; }
.warnings { background: #fff7e6; border: 1px solid #f0c36d; padding: .5rem 1rem; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35rem .25rem; border-bottom: 1px solid #e5e7eb; vertical-align: top; }
table { font-size: .93em; }
th { font-size: .8rem; color: #4b5563; }
.ci { display: block; font-size: .85em; color: #4b5563; white-space: nowrap; }
.ci.why { white-space: normal; }
sup.note { color: #4b5563; font-size: .7em; }
td.nowrap { white-space: nowrap; }
tr.group th { font-style: italic; }
.notes { font-size: .85em; color: #4b5563; }
svg.report-chart { display: block; width: 100%; margin: .5rem 0 1rem; }
code { overflow-wrap: anywhere; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _note(notes: Notes, reason: str) -> str:
    return f'<sup class="note">{notes.mark(reason)}</sup>'


def _estimate(e: Estimate | None, why: str | None, notes: Notes) -> str:
    if e is None:
        return '<span class="muted">-</span>'
    if e.value is None:
        return '<span class="muted">n/a</span>'
    if e.ci is not None:
        spread = _note(notes, NO_SPREAD_CELL) if e.method == "no_spread" else ""
        se = f'<span class="ci">SE {100 * e.se:.1f} pp</span>' if e.se is not None and not spread else ""
        return f'{_pct(e.value)}<span class="ci">[{_pct(e.ci[0])}, {_pct(e.ci[1])}]{spread}</span>{se}'
    return _pct(e.value) + _note(notes, f"no interval: {why or 'none computed'}")


# What a cell's interval is when every task gave the same rate (the page says the same, once per table).
NO_SPREAD_CELL = (
    "no spread between tasks: every task gave the same rate, so the interval is the exact bound on tasks"
)


def _notes(notes: Notes) -> list[str]:
    if not notes.reasons:
        return []
    items = "".join(f'<li value="{n}">{_e(text[:1].upper() + text[1:])}.</li>' for n, text in notes.lines())
    return [f'<ol class="notes">{items}</ol>']


def _cells(title: str, cells: list[Cell], bootstrap: int, extra: str | None = None) -> list[str]:
    if not cells:
        return []
    head = ["Arm", "Model"] + ([extra] if extra else [])
    head += ["Runs", "Tasks", "Measured", "Test-pass", "Mergeable", "Difference", "Corrected mergeable",
             'Mean <span style="white-space: nowrap">merge_score</span>', "Grader failures",
             "Judge failures", "Not measured", "Integrity not measured"]  # fmt: skip
    out = [f"<h2>{_e(title)}</h2>", '<div class="scroll"><table>', "<thead><tr>"]
    out += [f"<th>{h}</th>" for h in head] + ["</tr></thead><tbody>"]
    notes = Notes()
    for c in cells:
        why = no_interval_reason(c, bootstrap)
        row = [_e(c.arm or "-"), _e(c.model or "-")]
        if extra:
            row.append(_e(c.split if isinstance(c, ContaminationCell) else (c.prompt_style or "unknown")))
        test_pass = _estimate(c.test_pass_rate, why, notes)
        merge = _estimate(c.mergeable_rate, why, notes) + (" (provisional)" if c.provisional else "")
        if c.mergeable_bounds:
            merge += f'<span class="ci why">{_e(left_out_text(c))}</span>'
        difference = _estimate(c.difference, why, notes)
        corrected = _estimate(c.corrected_mergeable_rate, why or NO_LABEL_RESAMPLE, notes)
        score = "n/a" if c.mean_merge_score is None else f"{c.mean_merge_score:.3f}"
        parts = ", ".join(f"{_e(p)} {n}" for p, n in c.integrity_not_measured.items())
        row += [str(c.runs), str(c.tasks), str(c.measured), test_pass, merge, difference, corrected, score,
                str(c.grader_failures), str(c.judge_failures), str(c.not_measured),
                f"{c.integrity_not_measured_runs}" + (f" ({parts})" if parts else "")]  # fmt: skip
        out.append("<tr>" + "".join(f"<td>{v}</td>" for v in row) + "</tr>")
    return [*out, "</tbody></table></div>", *_notes(notes)]


def _contrasts(report: Report) -> list[str]:
    """The contrasts: the forest plot, then one row per pair compared, its metrics as columns, grouped by
    kind; each reason said once under the table."""
    groups, notes = contrast_table(report.contrasts)
    heads = "".join(f"<th>{_e(METRIC_NAMES[m][:1].upper() + METRIC_NAMES[m][1:])}</th>" for m in METRIC_NAMES)
    out = [
        '<h2 id="contrasts">Contrasts</h2>',
        '<p class="muted">Each row compares two arms of one model, or two models in one arm: b − a, in '
        "percentage points (pp), for each rate. A task counts once: b − a is the mean, over the tasks both "
        "sides measured, of each task's b − a, with a 95% t interval, its standard error (SE) and p-values "
        '(Holm-adjusted within each kind and rate: "holds" marks those that survive at 5%).</p>',
        forest_plot(report.contrasts),
        '<div class="scroll"><table><thead><tr><th>b − a</th><th>Shared tasks</th><th>Runs</th>'
        f"{heads}<th>How many runs are enough (mergeable)</th></tr></thead>",
    ]
    for title, lines in groups:
        out.append(f'<tbody><tr class="group"><th colspan="7">{_e(title)}</th></tr>')
        for row, cells, precision in lines:
            metrics = "".join(
                f'<td class="nowrap">{_e(text)}'
                + (f'<sup class="note">{note}</sup>' if note else "")
                + (f'<span class="ci why">{_e(test)}</span>' if test else "")
                + "</td>"
                for text, test, note in cells
            )
            out.append(
                f'<tr><td class="nowrap">{_e(row.b)} − {_e(row.a)}<span class="ci">{_e(row.within)}</span>'
                f"</td><td>{_e(row.tasks_text)}</td><td>{row.runs}</td>{metrics}<td>{_e(precision)}</td></tr>"
            )
        out.append("</tbody>")
    return [*out, "</table></div>", *_notes(notes)]


def _agreement(a: Agreement) -> str:
    raw = "n/a" if a.raw is None else f"{a.raw:.3f}"
    if a.kappa is None:
        ac1 = f", Gwet's AC1 {a.ac1:.3f}" if a.ac1 is not None else ""
        return f"κ undefined ({_e(a.undefined_reason or '')}); raw agreement {raw}{ac1}, n {a.n}"
    ci = f" [{a.kappa_ci[0]:.3f}, {a.kappa_ci[1]:.3f}] (tasks resampled)" if a.kappa_ci else ""
    return f"κ {a.kappa:.3f}{ci}; raw agreement {raw}, n {a.n}"


def render_report_html(
    report: Report,
    *,
    title: str = "Mergeability report",
    criteria: Mapping[str, Mapping[str, str]] | None = None,
    provenance: Provenance | None = None,
) -> str:
    """The report as one HTML document. ``criteria`` maps a task to its blocker ids' criteria, for the
    failed-blocker histograms (ids alone without it); ``provenance``, what the file says of itself (a
    section at its end, and its JSON in a ``<meta name="provenance">``)."""
    out = _head(report, title, provenance)
    if report.warnings:
        out.append(
            f'<section class="warnings"><strong>{counted(len(report.warnings), "warning")}</strong><ul>'
        )
        out += [f"<li>{_e(w)}</li>" for w in report.warnings] + ["</ul></section>"]
    if report.contrasts:
        out += _contrasts(report)
    if report.corrected_contrasts:
        out += _corrected_contrasts(report)
    out += _rates(report)
    out += _judges(report)
    out += _judge_error(report)
    out += _judge_agreement(report)
    out += _failed_blockers(report, criteria or {})
    if provenance is not None:
        out += _provenance_section(provenance)
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"


def _head(report: Report, title: str, provenance: Provenance | None) -> list[str]:
    """The document's head and the opening lines: the title and how the intervals were worked out."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        *([f'<meta name="provenance" content="{_e(provenance.model_dump_json())}">'] if provenance else []),
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body><main>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted">{_e(INTERVALS_TEXT)} Corrected rates: task-level bootstrap, {report.bootstrap} '
        f"replicates, seed {report.seed}. Report format {report.format}.</p>",
    ]


def _corrected_contrasts(report: Report) -> list[str]:
    out = [
        "<h3>Judge-error-corrected contrasts (mergeable)</h3>",
        '<div class="scroll"><table><thead><tr><th>Contrast</th><th>Corrected b − a [95%]</th>'
        "<th>Tasks</th></tr></thead><tbody>",
    ]
    out += [
        f"<tr><td>{_e(corrected_contrast_label(c))}</td><td>{_e(corrected_contrast_text(c))}</td>"
        f"<td>{c.tasks}</td></tr>"
        for c in report.corrected_contrasts
    ]
    out.append("</tbody></table></div>")
    return out


def _rates(report: Report) -> list[str]:
    """The rate tables: per arm and model (with its chart and grade.json metrics), by prompt style where
    that splits the cells further, and by training cutoff."""
    out = _cells("Per arm and model", report.cells, report.bootstrap)
    if report.cells:
        out.append(rates_chart(report.cells, report.bootstrap))
        lines = metric_lines(report.cells)
        if lines:
            out.append("<h3>grade.json metrics</h3><ul>")
            out += [
                f"<li>{_e(where or '-')}: <code>{_e(name)}</code> {_e(text)}</li>"
                for where, name, text in lines
            ]
            out.append("</ul>")
    if len(report.by_prompt_style) > len(report.cells):
        out += _cells("By prompt style", report.by_prompt_style, report.bootstrap, "Prompt style")
    out += _cells("By training cutoff", list(report.by_contamination), report.bootstrap, "Split")
    return out


def _judges(report: Report) -> list[str]:
    return [
        "<h2>Judges</h2>",
        "<ul>",
        *(
            f"<li>{j.role}: <code>{_e(j.judge)}</code>{' (scripted)' if j.scripted else ''}, "
            f"{counted(j.runs, 'run')}</li>"
            for j in report.judges
        ),
        "</ul>",
    ]


def _judge_error(report: Report) -> list[str]:
    """The judge's error against the human labels, and how many more labels the target wants."""
    acc = report.judge_accuracy
    out = ["<h2>Judge error</h2><p>"]
    if acc.sensitivity is not None and acc.specificity is not None:
        out.append(
            f"Against {counted(acc.labelled, 'human label')}: sensitivity {acc.sensitivity:.3f}, specificity "
            f"{acc.specificity:.3f}. {_e(labels_weighting_text(acc))} "
        )
    if acc.undefined_reason:
        out.append(f"No corrected rate: {_e(acc.undefined_reason)}. ")
    target = report.label_target
    if target is not None:
        out.append(_e(label_target_text(target.more_labels, target.target, target.reason)))
    out.append("</p>")
    return out


def _judge_agreement(report: Report) -> list[str]:
    """The two judges' agreement, overall and per item, and the table of where they disagree."""
    out = [
        "<h2>Judge agreement</h2>",
        "<ul>",
        f"<li>mergeable: {_agreement(report.agreement.mergeable)}</li>",
    ]
    out += [
        f"<li><code>{_e(item)}</code>: {_agreement(a)}</li>" for item, a in report.agreement.items.items()
    ]
    out.append("</ul>")
    if report.disagreements:
        out.append(
            '<div class="scroll"><table><thead><tr><th>Task</th><th>Run</th><th>Item</th><th>Primary</th>'
            "<th>Second</th></tr></thead><tbody>"
        )
        out += [
            f"<tr><td>{_e(d.task)}</td><td>{_e(d.run)}</td><td>{_e(d.item)}</td><td>{d.primary}</td>"
            f"<td>{d.second}</td></tr>"
            for d in report.disagreements
        ] + ["</tbody></table></div>"]
    return out


def _failed_blockers(report: Report, criteria: Mapping[str, Mapping[str, str]]) -> list[str]:
    """A histogram of the failed blockers for each task that has any."""
    out = ["<h2>Failed blockers per task</h2>"]
    failed = [t for t in report.tasks if t.failed_blockers]
    for t in failed:
        out.append(
            f'<h3><code>{_e(t.task)}</code> <span class="muted">{t.judged} judged of '
            f"{counted(t.runs, 'run')}</span>"
            "</h3>"
        )
        out.append(blocker_histogram(t, criteria.get(t.task)))
    if not failed:
        out.append('<p class="muted">No blocker failed in a judged run.</p>')
    return out


def _provenance_section(p: Provenance) -> list[str]:
    filters = ", ".join(f"{k} = {v}" for k, v in p.filters.items()) or "none"
    rubrics = "; ".join(
        f"{r.task}"
        + (f" r{r.revision}" if r.revision is not None else "")
        + f" {r.rubric_sha256 or '(no sha)'}"
        for r in p.rubrics
    )
    judges = "; ".join(f"{j.role}: {j.judge}" for j in p.judges) or "none"
    rows = [
        ("Repository", p.repository or ""),
        ("Filters", filters),
        ("Generated (UTC)", p.generated_at),
        ("Code", f"{p.package} {p.version or '(unknown version)'}, commit {p.commit or '(unknown)'}"),
        ("Report format", str(p.report_format)),
        ("Bootstrap", f"{p.bootstrap} replicates, seed {p.seed}"),
        ("Rubrics", rubrics or "none"),
        ("Judges", judges),
    ]
    return [
        '<h2 id="provenance">Provenance</h2><table><tbody>',
        *(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows),
        "</tbody></table>",
    ]


def label_target_text(more: int | None, target: float, reason: str | None) -> str:
    """ "Label 23 more runs to reach ±5 pp", or why no count can be given."""
    aim = f"±{100 * target:g} pp"
    if more is None:
        return f"No label count reaches {aim} on the corrected mergeable rate: {reason}."
    if more == 0:
        return f"The corrected mergeable rate is within {aim} with the labels there are."
    return (
        f"Label {counted(more, 'more run', 'more runs')} (every blocker of each) to reach {aim} on the "
        "corrected mergeable rate."
    )
