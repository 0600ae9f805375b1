"""Pages stay whole whatever size of text a maintainer or an imported file put in them (issue 8 §2): the
revision page with 100 KB of evidence, the calibration diff page with a 390 KB line of JavaScript. How long
they take is measured by benchmarks/app_pages.py; here, that they show everything, escaped."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.urls import reverse

from rubrics_app.models import RubricItem
from tests.app.client_helpers import logged_in
from tests.app.conftest import CALIBRATION_FILES, MakeRevision, rubric_data
from tests.app.render_helpers import LONG_JS_LINE


def test_the_revision_page_shows_100_kb_of_evidence(viewer: User, make_revision: MakeRevision) -> None:
    data = rubric_data()
    data["blockers"][0]["evidence"] = "a" * 100_000 + " src/fraction.py:2 <b>"
    revision = make_revision(data=data)
    assert len(RubricItem.objects.get(revision=revision, item_id="B1").evidence) > 100_000
    page = reverse("rubrics:revision_detail", args=[revision.task.repository_id, revision.pk])
    html = logged_in(viewer).get(page).content.decode()
    assert "a" * 100_000 + ' <code class="ref">src/fraction.py:2</code> &lt;b&gt;' in html


def test_the_calibration_diff_page_shows_a_390_kb_line_plain(
    viewer: User, make_revision: MakeRevision
) -> None:
    hostile = f"--- a/app.js\n+++ b/app.js\n@@ -0,0 +1,2 @@\n+{LONG_JS_LINE}\n+var ok = 1;\n".encode()
    revision = make_revision(files={**CALIBRATION_FILES, "calib/lazy.diff": hostile})
    diff = revision.calibration_diffs.get(path="calib/lazy.diff")
    page = reverse("rubrics:calibration_diff", args=[revision.task.repository_id, revision.pk, diff.pk])
    html = logged_in(viewer).get(page).content.decode()
    assert LONG_JS_LINE.replace('"', "&quot;") in html
    assert "shown without colours" in html
    assert '<span class="kd">var</span>' in html  # the short line is still highlighted
