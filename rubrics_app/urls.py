from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path

from rubrics_app.api.app import urls as api_urls
from rubrics_app.views import (
    calibration,
    drafting,
    exports,
    imports,
    items,
    jobs,
    labels,
    login,
    mutants,
    report,
    repositories,
    resume,
    revisions,
    runs,
    sweeps,
    tasks,
    tokens,
)
from rubrics_app.views.common import require_post

# A BadParameter (a control character in the query or the path, say) is a page that names the parameter.
handler400 = "rubrics_app.views.common.bad_request"


@login_not_required
def favicon(request: HttpRequest) -> HttpResponseRedirect:
    # Resolved per request, not when this module is imported: with DEBUG=false the name is the hashed one
    # from collectstatic's manifest, which commands that never serve a page (migrate, collectstatic itself)
    # must not need.
    return HttpResponseRedirect(static("rubrics/favicon.ico"))


logout_view = require_post("logs you out", back="rubrics:repository_list")(auth_views.LogoutView.as_view())
# A logout sent after the session ended has nothing left to do: it is not kept to be sent again.
logout_view.kept_across_login = False  # type: ignore[attr-defined]

app_urls = [
    path("", repositories.repository_list, name="repository_list"),
    path("settings/tokens/", tokens.token_settings, name="token_settings"),
    path("settings/tokens/<int:token_pk>/revoke/", tokens.token_revoke, name="token_revoke"),
    path("repos/<int:repo_pk>/", repositories.repository_detail, name="repository_detail"),
    path("repos/<int:repo_pk>/import/", imports.rubric_upload, name="rubric_upload"),
    path("repos/<int:repo_pk>/tasks/<int:task_pk>/", tasks.task_detail, name="task_detail"),
    path("repos/<int:repo_pk>/tasks/<int:task_pk>/files/", calibration.task_files, name="task_files"),
    path("repos/<int:repo_pk>/judges/", calibration.judge_settings, name="judge_settings"),
    path("repos/<int:repo_pk>/drafting/", drafting.draft_settings, name="draft_settings"),
    path("repos/<int:repo_pk>/remote/", exports.remote_settings, name="remote_settings"),
    path("repos/<int:repo_pk>/tasks/<int:task_pk>/draft/", drafting.draft_start, name="draft_start"),
    path("repos/<int:repo_pk>/revisions/<int:rev_pk>/draft-input/", drafting.draft_input, name="draft_input"),
    path(
        "repos/<int:repo_pk>/revisions/<int:rev_pk>/draft-input.json",
        drafting.draft_input_download,
        name="draft_input_download",
    ),
    path(
        "repos/<int:repo_pk>/revisions/<int:rev_pk>/calibrate/",
        calibration.calibration_start,
        name="revision_calibration_start",
    ),
    path(
        "repos/<int:repo_pk>/calibrations/<int:run_pk>/",
        calibration.calibration_detail,
        name="calibration_detail",
    ),
    path(
        "repos/<int:repo_pk>/calibrations/<int:run_pk>/rows/<int:row_pk>/diff/",
        calibration.calibration_row_diff,
        name="calibration_row_diff",
    ),
    path(
        "repos/<int:repo_pk>/calibrations/<int:run_pk>/mutants/<int:mutant_pk>/diff/",
        mutants.calibration_mutant_diff,
        name="calibration_mutant_diff",
    ),
    path(
        "repos/<int:repo_pk>/calibrations/<int:run_pk>/mutants/<int:mutant_pk>/harmless/",
        mutants.mutant_mark_harmless,
        name="mutant_mark_harmless",
    ),
    path(
        "repos/<int:repo_pk>/calibrations/<int:run_pk>/mutants/<int:mutant_pk>/unmark/",
        mutants.mutant_unmark,
        name="mutant_unmark",
    ),
    path("repos/<int:repo_pk>/revisions/<int:rev_pk>/", revisions.revision_detail, name="revision_detail"),
    path(
        "repos/<int:repo_pk>/revisions/<int:rev_pk>/fields/",
        revisions.revision_fields,
        name="revision_fields",
    ),
    path("repos/<int:repo_pk>/revisions/<int:rev_pk>/edit/", revisions.revision_edit, name="revision_edit"),
    path(
        "repos/<int:repo_pk>/revisions/<int:rev_pk>/new-draft/",
        revisions.revision_new_draft,
        name="revision_new_draft",
    ),
    path(
        "repos/<int:repo_pk>/revisions/<int:rev_pk>/approve/",
        revisions.revision_approve,
        name="revision_approve",
    ),
    path(
        "repos/<int:repo_pk>/revisions/<int:rev_pk>/admit/", revisions.revision_admit, name="revision_admit"
    ),
    path(
        "repos/<int:repo_pk>/revisions/<int:rev_pk>/compare/",
        revisions.revision_compare,
        name="revision_compare",
    ),
    path(
        "repos/<int:repo_pk>/revisions/<int:rev_pk>/calibration/<int:diff_pk>/",
        revisions.calibration_diff,
        name="calibration_diff",
    ),
    path("repos/<int:repo_pk>/revisions/<int:rev_pk>/rubric.json", exports.export_json, name="export_json"),
    path("repos/<int:repo_pk>/revisions/<int:rev_pk>/rubric.zip", exports.export_zip_view, name="export_zip"),
    path(
        "repos/<int:repo_pk>/revisions/<int:rev_pk>/write-checkout/",
        exports.export_checkout,
        name="export_checkout",
    ),
    path(
        "repos/<int:repo_pk>/revisions/<int:rev_pk>/pull-request/",
        exports.export_pull_request,
        name="export_pull_request",
    ),
    path(
        "repos/<int:repo_pk>/revisions/<int:rev_pk>/items/add/<str:kind>/",
        items.item_add,
        name="item_add",
    ),
    path("repos/<int:repo_pk>/items/<int:item_pk>/", items.item_row, name="item_row"),
    path("repos/<int:repo_pk>/items/<int:item_pk>/remove/", items.item_remove, name="item_remove"),
    path("repos/<int:repo_pk>/items/<int:item_pk>/edit/", items.item_edit, name="item_edit"),
    path("repos/<int:repo_pk>/items/<int:item_pk>/approve/", items.item_approve, name="item_approve"),
    path(
        "repos/<int:repo_pk>/items/<int:item_pk>/request-changes/",
        items.item_request_changes,
        name="item_request_changes",
    ),
    path("repos/<int:repo_pk>/items/<int:item_pk>/comment/", items.item_comment, name="item_comment"),
    # Agent runs, the disagreement queue and re-review.
    path("repos/<int:repo_pk>/runs/import/", runs.runs_upload, name="runs_upload"),
    path(
        "repos/<int:repo_pk>/runs/import/swe-bench/", runs.runs_upload_swe_bench, name="runs_upload_swe_bench"
    ),
    path("repos/<int:repo_pk>/runs/<int:run_pk>/", runs.run_detail, name="run_detail"),
    path("repos/<int:repo_pk>/queue/", runs.queue_list, name="queue"),
    path("repos/<int:repo_pk>/queue/undo/", runs.queue_undo, name="queue_undo"),
    path("repos/<int:repo_pk>/queue/labels.<str:fmt>", labels.labels_download, name="queue_labels_download"),
    path("repos/<int:repo_pk>/queue/labels/upload/", labels.labels_upload, name="queue_labels_upload"),
    path("repos/<int:repo_pk>/queue/audit/draw/", labels.audit_draw, name="queue_audit_draw"),
    path("repos/<int:repo_pk>/queue/adjudication/", labels.adjudication, name="queue_adjudication"),
    path("repos/<int:repo_pk>/queue/labels-per-pair/", labels.labels_per_pair, name="queue_labels_per_pair"),
    path("repos/<int:repo_pk>/queue/<int:grade_pk>/<str:item_id>/", runs.queue_entry, name="queue_entry"),
    path("repos/<int:repo_pk>/queue/<int:grade_pk>/<str:item_id>/flag/", runs.queue_flag, name="queue_flag"),
    path(
        "repos/<int:repo_pk>/queue/<int:grade_pk>/<str:item_id>/label/", runs.queue_label, name="queue_label"
    ),
    path("repos/<int:repo_pk>/items/<int:item_pk>/dispute/", runs.item_dispute, name="item_dispute"),
    path("repos/<int:repo_pk>/flags/<str:what>/<int:pk>/dismiss/", runs.flag_dismiss, name="flag_dismiss"),
    path("repos/<int:repo_pk>/jobs/<int:job_pk>/", jobs.job_detail, name="job_detail"),
    path("repos/<int:repo_pk>/jobs/<int:job_pk>/files/<int:file_pk>", jobs.job_file, name="job_file"),
    path("repos/<int:repo_pk>/sweeps/start/", sweeps.sweep_start, name="sweep_start"),
    path("repos/<int:repo_pk>/sweeps/<int:sweep_pk>/", sweeps.sweep_detail, name="sweep_detail"),
    # The report (§7) and its downloads.
    path("repos/<int:repo_pk>/report/", report.report_page, name="report"),
    path("repos/<int:repo_pk>/report.json", report.report_json, name="report_json"),
    path("repos/<int:repo_pk>/report.csv", report.report_csv_view, name="report_csv"),
    path("repos/<int:repo_pk>/report.html", report.report_html, name="report_html"),
    path("repos/<int:repo_pk>/report/figure.svg", report.report_figure, name="report_figure"),
    path("repos/<int:repo_pk>/report/runs.zip", report.report_export, name="report_export"),
    path("repos/<int:repo_pk>/report/runs.<str:fmt>", report.report_runs, name="report_runs"),
    path("repos/<int:repo_pk>/report/items.<str:fmt>", report.report_items, name="report_items"),
    path("repos/<int:repo_pk>/report/cutoffs/", report.report_cutoffs, name="report_cutoffs"),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api_urls()),
    path("accounts/login/", login.LoginView.as_view(), name="login"),
    path("accounts/logout/", logout_view, name="logout"),
    path("accounts/resume/", resume.resume_post, name="resume_post"),
    path("accounts/resume/drop/", resume.resume_drop, name="resume_drop"),
    # Browsers ask for /favicon.ico whatever the page links to; the login page shows it too.
    path("favicon.ico", favicon),
    path("", include((app_urls, "rubrics"))),
]
