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
from grading.report.charts import blocker_histogram, forest_plot, no_interval_reason, rates_chart
from grading.report.models import Cell, ContaminationCell, Report
from grading.report.provenance import Provenance
from grading.report.render import (
    INTERVALS_TEXT,
    METRIC_NAMES,
    contrast_estimate,
    contrast_label,
    corrected_contrast_label,
    corrected_contrast_text,
    estimate_note,
    labels_weighting_text,
    left_out_text,
    metric_lines,
    precision_text,
)
from grading.report.stats import Estimate

_STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827; margin: 0; }
main { max-width: 1200px; margin: 0 auto; padding: 1rem 1.25rem 3rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
.muted { color: #4b5563; }
.warnings { background: #fff7e6; border: 1px solid #f0c36d; padding: .5rem 1rem; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35rem .3rem; border-bottom: 1px solid #e5e7eb; vertical-align: top; }
th { font-size: .8rem; color: #4b5563; }
.ci { display: block; font-size: .85em; color: #4b5563; white-space: nowrap; }
.ci.why { white-space: normal; }
svg.report-chart { display: block; width: 100%; margin: .5rem 0 1rem; }
code { overflow-wrap: anywhere; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _estimate(e: Estimate | None, why: str | None) -> str:
    if e is None:
        return '<span class="muted">-</span>'
    if e.value is None:
        return '<span class="muted">n/a</span>'
    if e.ci is not None:
        note = estimate_note(e)
        note_html = f'<span class="ci why">{_e(note)}</span>' if note else ""
        return f'{_pct(e.value)}<span class="ci">[{_pct(e.ci[0])}, {_pct(e.ci[1])}]</span>{note_html}'
    return f'{_pct(e.value)}<span class="ci why">no interval: {_e(why or "none computed")}</span>'


def _cells(title: str, cells: list[Cell], bootstrap: int, extra: str | None = None) -> list[str]:
    if not cells:
        return []
    head = ["Arm", "Model"] + ([extra] if extra else [])
    head += ["Runs", "Tasks", "Measured", "Test-pass", "Mergeable", "Gap", "Corrected mergeable",
             "Mean merge_<wbr>score", "Grader failures", "Judge failures", "Not measured",
             "Integrity not measured"]  # fmt: skip
    out = [f"<h2>{_e(title)}</h2>", '<div class="scroll"><table>', "<thead><tr>"]
    out += [f"<th>{h}</th>" for h in head] + ["</tr></thead><tbody>"]
    for c in cells:
        why = no_interval_reason(c, bootstrap)
        row = [_e(c.arm or "-"), _e(c.model or "-")]
        if extra:
            row.append(_e(c.split if isinstance(c, ContaminationCell) else (c.prompt_style or "unknown")))
        merge = _estimate(c.mergeable_rate, why) + (" (provisional)" if c.provisional else "")
        if c.mergeable_bounds:
            merge += f'<span class="ci why">{_e(left_out_text(c))}</span>'
        corrected = _estimate(c.corrected_mergeable_rate, "too few human labels" if why is None else why)
        score = "n/a" if c.mean_merge_score is None else f"{c.mean_merge_score:.3f}"
        parts = ", ".join(f"{_e(p)} {n}" for p, n in c.integrity_not_measured.items())
        row += [str(c.runs), str(c.tasks), str(c.measured), _estimate(c.test_pass_rate, why), merge,
                _estimate(c.difference, why), corrected, score, str(c.grader_failures),
                str(c.judge_failures), str(c.not_measured),
                f"{c.integrity_not_measured_runs}" + (f" ({parts})" if parts else "")]  # fmt: skip
        out.append("<tr>" + "".join(f"<td>{v}</td>" for v in row) + "</tr>")
    return [*out, "</tbody></table></div>"]


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
    criteria = criteria or {}
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        *([f'<meta name="provenance" content="{_e(provenance.model_dump_json())}">'] if provenance else []),
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body><main>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted">{_e(INTERVALS_TEXT)} Corrected rates: task-level bootstrap, {report.bootstrap} '
        f"replicates, seed {report.seed}. Report format {report.format}.</p>",
    ]
    if report.warnings:
        out.append(f'<section class="warnings"><strong>{len(report.warnings)} warnings</strong><ul>')
        out += [f"<li>{_e(w)}</li>" for w in report.warnings] + ["</ul></section>"]
    if report.contrasts:
        out += [
            '<h2 id="contrasts">Contrasts</h2>',
            '<p class="muted">b − a: the mean over the tasks both sides measured of each task\'s difference '
            "(every task once), with 95% t intervals on those differences, standard errors and p-values "
            "(Holm within each kind and metric). A hollow point: fewer than 10 shared tasks.</p>",
            forest_plot(report.contrasts),
            '<div class="scroll"><table><thead><tr><th>Contrast</th><th>Metric</th><th>b − a [95%]</th>'
            "<th>Tasks</th><th>Runs</th><th>How many runs are enough</th></tr></thead><tbody>",
        ]
        for c in report.contrasts:
            out.append(
                f"<tr><td>{_e(contrast_label(c))}</td><td>{METRIC_NAMES[c.metric]}</td>"
                f"<td>{_e(contrast_estimate(c))}</td><td>{c.tasks}</td><td>{c.runs}</td>"
                f"<td>{_e(precision_text(c))}</td></tr>"
            )
        out.append("</tbody></table></div>")
    if report.corrected_contrasts:
        out += [
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
    out += _cells("Per arm and model", report.cells, report.bootstrap)
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
    out += ["<h2>Judges</h2>", "<ul>"]
    out += [
        f"<li>{j.role}: <code>{_e(j.judge)}</code>{' (scripted)' if j.scripted else ''}, {j.runs} runs</li>"
        for j in report.judges
    ] + ["</ul>"]
    acc = report.judge_accuracy
    out.append("<h2>Judge error</h2><p>")
    if acc.sensitivity is not None and acc.specificity is not None:
        out.append(
            f"Against {acc.labelled} human labels: sensitivity {acc.sensitivity:.3f}, specificity "
            f"{acc.specificity:.3f}. {_e(labels_weighting_text(acc))} "
        )
    if acc.undefined_reason:
        out.append(f"No corrected rate: {_e(acc.undefined_reason)}. ")
    target = report.label_target
    if target is not None:
        out.append(_e(label_target_text(target.more_labels, target.target, target.reason)))
    out.append("</p>")
    out += [
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
    out.append("<h2>Failed blockers per task</h2>")
    failed = [t for t in report.tasks if t.failed_blockers]
    for t in failed:
        out.append(
            f'<h3><code>{_e(t.task)}</code> <span class="muted">{t.judged} judged of {t.runs} runs</span>'
            "</h3>"
        )
        out.append(blocker_histogram(t, criteria.get(t.task)))
    if not failed:
        out.append('<p class="muted">No blocker failed in a judged run.</p>')
    if provenance is not None:
        out += _provenance_section(provenance)
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"


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
        f"Label {more} more run{'s' if more != 1 else ''} (every blocker of each) to reach {aim} on the "
        "corrected mergeable rate."
    )
