"""Forms of the agent-run side: run upload, human verdicts, disputes and their dismissal."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from grading import MAX_RUN_INT
from rubrics_app.models import HumanLabel


class RunsUploadForm(forms.Form):
    file = forms.FileField(label="a zip of run directories (run.json, grade.json, workspace.diff, ...)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The repository page also holds the rubric upload form: distinct element ids.
        kwargs.setdefault("auto_id", "id_runs_%s")
        super().__init__(*args, **kwargs)

    def clean_file(self) -> UploadedFile[bytes]:
        upload: UploadedFile[bytes] = self.cleaned_data["file"]
        limit = int(settings.RUNS_UPLOAD_MAX_BYTES)
        if upload.size is not None and upload.size > limit:
            raise forms.ValidationError(f"The file is larger than {limit // (1024 * 1024)} MiB.")
        return upload


class SweBenchUploadForm(forms.Form):
    """The SWE-bench harness's output: predictions.jsonl, a zip of its report.json files, and the arm and
    repetition every prediction is a run of."""

    predictions = forms.FileField(
        label="predictions: .jsonl, or .json as a list or SWE-agent's preds.json "
        "(instance_id, model_name_or_path, model_patch)"
    )
    reports = forms.FileField(
        label="a zip of the harness's report.json files (logs/run_evaluation/RUN_ID, or a submission folder)"
    )
    arm = forms.CharField(max_length=200)
    repetition = forms.IntegerField(min_value=0, max_value=MAX_RUN_INT, initial=0)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "id_swe_%s")
        super().__init__(*args, **kwargs)

    def _capped(self, name: str) -> UploadedFile[bytes]:
        upload: UploadedFile[bytes] = self.cleaned_data[name]
        limit = int(settings.RUNS_UPLOAD_MAX_BYTES)
        if upload.size is not None and upload.size > limit:
            raise forms.ValidationError(f"The file is larger than {limit // (1024 * 1024)} MiB.")
        return upload

    def clean_predictions(self) -> UploadedFile[bytes]:
        return self._capped("predictions")

    def clean_reports(self) -> UploadedFile[bytes]:
        return self._capped("reports")

    def clean_arm(self) -> str:
        value = str(self.cleaned_data.get("arm") or "")
        if "\x00" in value:
            raise forms.ValidationError("The arm holds a NUL character.")
        return value


class HumanVerdictForm(forms.Form):
    verdict = forms.ChoiceField(choices=HumanLabel.choices)
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=5000)

    def clean_note(self) -> str:
        value = str(self.cleaned_data.get("note") or "")
        if "\x00" in value:
            raise forms.ValidationError("The note holds a NUL character.")
        return value


class ReasonForm(forms.Form):
    """A dispute's reason, or why a dispute or an evidence change is dismissed: never blank."""

    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=5000)

    def clean_reason(self) -> str:
        value = str(self.cleaned_data.get("reason") or "").strip()
        if not value:
            raise forms.ValidationError("Say why.")
        if "\x00" in value:
            raise forms.ValidationError("The reason holds a NUL character.")
        return value


class SweepForm(forms.Form):
    """What a sweep grades: every run of the repository, or of one task (and its arm or model), against
    each task's admitted revision or one approved revision."""

    task = forms.IntegerField(required=False, widget=forms.HiddenInput, min_value=1)
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput, min_value=1)
    arm = forms.CharField(required=False, max_length=200)
    model = forms.CharField(required=False, max_length=200)
    # When the job ends, the runs in the sweep's scope as run folders with their metrics.json, in a zip.
    export = forms.BooleanField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "id_sweep_%s")
        super().__init__(*args, **kwargs)
