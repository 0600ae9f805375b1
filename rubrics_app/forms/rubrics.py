"""Forms of the rubric pages. Field-level checks mirror grading.schema so errors show beside the field;
the rubric as a whole is still checked by grading.schema (RubricRevision.validation_errors)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from grading import MAX_WEIGHT, glob_error
from rubrics_app.models import ITEM_ID_RE, ItemKind, RubricItem, RubricRevision

# ModelForm is generic only in django-stubs; at run time it cannot be subscripted (no django_stubs_ext patch).
if TYPE_CHECKING:
    _ItemModelForm = forms.ModelForm[RubricItem]
    _RevisionModelForm = forms.ModelForm[RubricRevision]
else:
    _ItemModelForm = _RevisionModelForm = forms.ModelForm


# A version past this is no version this app wrote; passed on, it would overflow the column (a 500).
MAX_VERSION = 2**31 - 1


class ItemForm(_ItemModelForm):
    """Edit one blocker or non-blocker. ``version`` is the one the editor started from (optimistic lock)."""

    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1, max_value=MAX_VERSION)

    class Meta:
        model = RubricItem
        fields = ["item_id", "criterion", "rationale", "evidence", "needs_tree", "weight"]
        labels = {"item_id": "Id", "needs_tree": "Needs the base tree (the diff-only judge skips it)"}
        error_messages = {
            "item_id": {"required": "Give the item an id, such as B1 or N2."},
            "criterion": {"required": "Say what the change must do: the criterion cannot be blank."},
            "evidence": {
                "required": "A blocker cites evidence: a PR review comment, a guidance line or path:line."
            },
        }
        widgets = {
            "criterion": forms.Textarea(attrs={"rows": 3}),
            "rationale": forms.Textarea(attrs={"rows": 3}),
            "evidence": forms.Textarea(attrs={"rows": 2}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["item_id"].validators = []
        self.fields["item_id"].help_text = ""
        if self.instance.kind == ItemKind.BLOCKER:
            del self.fields["weight"]
            self.fields["evidence"].required = True
            self.fields[
                "evidence"
            ].help_text = "a review comment URL on the source PR, a guidance line, or path:line"
        else:
            del self.fields["evidence"]
            del self.fields["needs_tree"]
            self.fields["weight"].help_text = "how much this non-blocker counts in merge_score"
        if not self.is_bound:
            self.initial["version"] = self.instance.version

    def clean_item_id(self) -> str:
        value = str(self.cleaned_data["item_id"]).strip()
        if not re.match(ITEM_ID_RE, value) or len(value) > 40:
            raise forms.ValidationError(
                "Use letters, digits, '.', '_' or '-', starting with a letter or digit."
            )
        # Ids are unique across blockers and non-blockers of a revision (a database constraint too).
        taken = RubricItem.objects.filter(revision_id=self.instance.revision_id, item_id=value)
        if taken.exclude(pk=self.instance.pk).exists():
            raise forms.ValidationError(f"{value} is already the id of another item of this revision.")
        return value

    def clean_criterion(self) -> str:
        value = str(self.cleaned_data["criterion"])
        if not value.strip():
            raise forms.ValidationError("Say what the change must do: the criterion cannot be blank.")
        return value

    def clean_evidence(self) -> str:
        value = str(self.cleaned_data.get("evidence") or "")
        if self.instance.kind == ItemKind.BLOCKER and not value.strip():
            raise forms.ValidationError(
                "A blocker cites evidence: a PR review comment, a guidance line or path:line."
            )
        return value

    def clean_weight(self) -> float:
        value = self.cleaned_data.get("weight")
        if value is None or float(value) <= 0:
            raise forms.ValidationError("A weight is a number above 0.")
        if float(value) > MAX_WEIGHT:  # grading.schema's bound: weights this large made merge_score NaN
            raise forms.ValidationError(f"A weight is at most {MAX_WEIGHT}.")
        return float(value)

    def text_fields(self) -> dict[str, Any]:
        """The submitted content, by model field (only the fields this kind of item has)."""
        return {name: self.cleaned_data[name] for name in self.Meta.fields if name in self.fields}


class NewItemForm(ItemForm):
    """A blocker or non-blocker to add to a draft: ``instance`` is an unsaved item of that revision and kind.

    The same checks as an edit (id format and uniqueness, non-blank criterion, evidence, weight above 0);
    field ids are prefixed by kind so both add forms fit on one page.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", f"id_add_{kwargs['instance'].kind}_%s")
        super().__init__(*args, **kwargs)
        # A new row has no version to lock against.
        del self.fields["version"]
        self.initial.pop("version", None)


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


class GlobsField(forms.CharField):
    """One glob per line, checked with the glob dialect of grading.globs."""

    widget = forms.Textarea(attrs={"rows": 3, "class": "mono"})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(str(v) for v in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        return _lines(str(value or ""))

    def validate(self, value: Any) -> None:
        if self.required and not value:
            raise forms.ValidationError("Give at least one glob: a change must be allowed somewhere.")
        problems = [f"{glob}: {problem}" for glob in value if (problem := glob_error(glob))]
        if problems:
            raise forms.ValidationError(problems)


class RevisionForm(_RevisionModelForm):
    """Intent, scope and hack report of a draft revision."""

    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1, max_value=MAX_VERSION)
    allowed_globs = GlobsField(required=True, help_text="one per line; ** crosses /, * and ? do not")
    denied_globs = GlobsField(required=False, help_text="one per line, carved out of the allowed globs")

    class Meta:
        model = RubricRevision
        fields = list(RubricRevision.EDITABLE_FIELDS)
        labels = {
            "lazy_solution": "Lazy solution (how a weak change passes the tests and is still unmergeable)",
            "alt_valid_solution": "Valid alternative (the rubric must not penalize it)",
        }
        error_messages = {
            "intent": {"required": "Say what the maintainer wants: the intent cannot be blank."},
            "lazy_solution": {
                "required": "Describe how a weak change could pass the tests and still be unmergeable."
            },
            "alt_valid_solution": {"required": "Describe a different approach that is also mergeable."},
        }
        widgets = {
            "intent": forms.Textarea(attrs={"rows": 4}),
            "lazy_solution": forms.Textarea(attrs={"rows": 3}),
            "alt_valid_solution": forms.Textarea(attrs={"rows": 3}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("max_changed_lines", "max_files"):
            self.fields[name].widget.attrs["min"] = 1
        if not self.is_bound:
            self.initial["version"] = self.instance.version

    def clean_intent(self) -> str:
        value = str(self.cleaned_data["intent"])
        if not value.strip():
            raise forms.ValidationError("Say what the maintainer wants: the intent cannot be blank.")
        return value

    def _positive_or_none(self, name: str) -> int | None:
        value = self.cleaned_data.get(name)
        if value is not None and int(value) < 1:
            raise forms.ValidationError("Leave it empty for no limit, or give a number of at least 1.")
        return None if value is None else int(value)

    def clean_max_changed_lines(self) -> int | None:
        return self._positive_or_none("max_changed_lines")

    def clean_max_files(self) -> int | None:
        return self._positive_or_none("max_files")

    def content(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in self.Meta.fields}


class CommentForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=5000, label="Comment")

    def clean_text(self) -> str:
        value = str(self.cleaned_data["text"])
        if not value.strip():
            raise forms.ValidationError("A comment cannot be blank.")
        return value


class RequestChangesForm(forms.Form):
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), max_length=5000, label="What should change", required=False
    )


class RubricUploadForm(forms.Form):
    file = forms.FileField(label="rubric.json, or a zip of rubric.json with its calib/ diffs")

    def clean_file(self) -> UploadedFile[bytes]:
        upload: UploadedFile[bytes] = self.cleaned_data["file"]
        limit = int(settings.RUBRIC_UPLOAD_MAX_BYTES)
        if upload.size is not None and upload.size > limit:
            raise forms.ValidationError(f"The file is larger than {limit // 1024} KiB.")
        return upload


class CalibrationOptionsForm(forms.Form):
    """The options of "Run calibration" and "Admit": the injection suite (a checkbox, absent means off)."""

    injection_suite = forms.BooleanField(required=False)


class CheckoutExportForm(forms.Form):
    private = forms.BooleanField(required=False, label="to the private path (held-out rubrics)")
    branch = forms.CharField(
        required=False, max_length=200, label="as a commit on a new branch (optional)", strip=True
    )

    def clean_branch(self) -> str:
        value = str(self.cleaned_data.get("branch") or "")
        # git check-ref-format has the last word; this keeps option-like and spaced names out early.
        if value and (value.startswith("-") or not re.fullmatch(r"[A-Za-z0-9._/-]+", value)):
            raise forms.ValidationError("Use letters, digits, '.', '_', '/' or '-' for the branch name.")
        return value


class ExportConfirmForm(forms.Form):
    """The confirmation an export of a disputed revision asks for (views.exports): the box, ticked.
    ``asked`` marks a request sent from the confirmation page, so an unticked box says what is missing."""

    confirm_disputed = forms.BooleanField(
        required=True,
        error_messages={
            "required": "Nothing was exported: tick the box to export with the disputed blockers named above."
        },
    )
    asked = forms.CharField(required=False, widget=forms.HiddenInput)


class RemoteSettingForm(forms.Form):
    """Where the repository's admitted rubrics are sent; checked in
    services.rubrics.pull_requests.set_remote_setting."""

    remote = forms.CharField(
        max_length=500,
        required=False,
        label="Remote",
        help_text="a GitHub OWNER/NAME (a pull request is opened there), or a git URL (the branch is pushed, "
        "no pull request); leave empty to send nothing",
    )
    token_env = forms.CharField(
        max_length=100,
        required=False,
        label="Token variable",
        help_text="the name of the worker's environment variable holding the token (GITHUB_TOKEN or "
        "GITHUB_TOKEN_<SUFFIX>); the token itself is never entered here. Empty: push without one",
    )
    base_branch = forms.CharField(
        max_length=200,
        required=False,
        label="Pull requests into",
        help_text="the base branch (main if empty)",
    )

    def __init__(self, *args: Any, instance_setting: Any = None, **kwargs: Any) -> None:
        if instance_setting is not None and not args and "initial" not in kwargs:
            kwargs["initial"] = {
                "remote": instance_setting.remote,
                "token_env": instance_setting.token_env,
                "base_branch": instance_setting.base_branch,
            }
        super().__init__(*args, **kwargs)


def _decoding_lines(value: str) -> dict[str, Any]:
    """``NAME=VALUE`` per line, read as the command line's ``--decoding`` (grading.judge.specs)."""
    from grading import InputError, parse_decoding

    try:
        return parse_decoding(_lines(value))
    except InputError as exc:
        raise forms.ValidationError(exc.message) from None


class JudgeSettingForm(forms.Form):
    """A repository's judges. Specs are checked by grading.judge.specs in services.judges.set_judges."""

    judge = forms.CharField(
        max_length=500,
        label="Primary judge",
        help_text="anthropic:<full model id>, openai:<full model id> or scripted:<file> (demos only)",
    )
    second_judge = forms.CharField(
        max_length=500, required=False, help_text="optional; from another model family; only compared"
    )
    decoding = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="NAME=VALUE per line, e.g. temperature=0",
    )
    second_decoding = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    monthly_cap_usd = forms.DecimalField(
        required=False, min_value=0, max_digits=10, decimal_places=2, label="Monthly spend cap (USD)"
    )
    sweep_mode = forms.ChoiceField(
        choices=[("interactive", "interactive (answers in seconds)"), ("batch", "batch (cheaper, slower)")],
        initial="interactive",
        required=False,  # a post without it (a script, an older page) keeps the repository's choice
        label="Sweeps",
        help_text="batch: the provider's batch API, half price, answers within hours",
    )

    def __init__(self, *args: Any, instance_setting: Any = None, **kwargs: Any) -> None:
        if instance_setting is not None and not args and "initial" not in kwargs:
            kwargs["initial"] = {
                "judge": instance_setting.judge,
                "second_judge": instance_setting.second_judge,
                "decoding": "\n".join(f"{k}={v}" for k, v in instance_setting.decoding.items()),
                "second_decoding": "\n".join(f"{k}={v}" for k, v in instance_setting.second_decoding.items()),
                "monthly_cap_usd": instance_setting.monthly_cap_usd,
                "sweep_mode": "batch" if instance_setting.sweep_batch else "interactive",
            }
        super().__init__(*args, **kwargs)

    def clean_decoding(self) -> dict[str, Any]:
        return _decoding_lines(self.cleaned_data.get("decoding") or "")

    def clean_second_decoding(self) -> dict[str, Any]:
        return _decoding_lines(self.cleaned_data.get("second_decoding") or "")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        # set_judges takes a flag (None: as it was): the page's choice names it for the person choosing
        mode = cleaned.pop("sweep_mode", "") or None
        cleaned["sweep_batch"] = None if mode is None else mode == "batch"
        return cleaned


class TaskFilesForm(forms.Form):
    """The task's own files; a file left empty is kept as it is."""

    oracle_diff = forms.FileField(required=False, label="oracle.diff")
    oracle_grade = forms.FileField(required=False, label="oracle_grade.json")
    tests_base = forms.FileField(required=False, label="tests_base.txt")

    NAMES = {
        "oracle_diff": "oracle.diff",
        "oracle_grade": "oracle_grade.json",
        "tests_base": "tests_base.txt",
    }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        limit = settings.RUBRIC_UPLOAD_MAX_BYTES
        for field in self.NAMES:
            upload = cleaned.get(field)
            if upload is not None and upload.size is not None and upload.size > limit:
                self.add_error(field, f"larger than {limit} bytes")
        if not any(cleaned.get(field) for field in self.NAMES) and not self.errors:
            raise forms.ValidationError("choose at least one file")
        return cleaned

    def files_given(self) -> dict[str, bytes]:
        return {
            name: self.cleaned_data[field].read()
            for field, name in self.NAMES.items()
            if self.cleaned_data.get(field)
        }


class DraftSettingForm(forms.Form):
    """How the repository's rubrics are drafted; checked in services.drafting.run.set_draft_settings."""

    drafter = forms.CharField(
        max_length=500,
        label="Drafter model",
        help_text="anthropic:<full model id>, never an alias; or scripted:<file> (demos only)",
    )
    github_repository = forms.CharField(
        max_length=200,
        required=False,
        label="GitHub repository",
        help_text="OWNER/NAME, where merged PRs are read; leave empty to draft from uploaded exports only",
    )
    use_token = forms.BooleanField(required=False, label="Read GitHub with a token")
    token_env = forms.CharField(
        max_length=100,
        required=False,
        label="Token variable",
        help_text="the name of the worker's environment variable holding the token (GITHUB_TOKEN or "
        "GITHUB_TOKEN_<SUFFIX>); the token itself is never entered here",
    )
    guidance_globs = GlobsField(
        required=False,
        label="Guidance files",
        help_text="one glob per line, read at the task's base commit",
    )

    def __init__(self, *args: Any, instance_setting: Any = None, **kwargs: Any) -> None:
        if instance_setting is not None and not args and "initial" not in kwargs:
            kwargs["initial"] = {
                "drafter": instance_setting.drafter,
                "github_repository": instance_setting.github_repository,
                "use_token": instance_setting.use_token,
                "token_env": instance_setting.token_env,
                "guidance_globs": list(instance_setting.guidance_globs or []),
            }
        elif not args and "initial" not in kwargs:
            from grading import DEFAULT_GUIDANCE_GLOBS

            kwargs["initial"] = {"token_env": "GITHUB_TOKEN", "guidance_globs": list(DEFAULT_GUIDANCE_GLOBS)}
        super().__init__(*args, **kwargs)


class DraftRequestForm(forms.Form):
    """Draft from a merged PR: its number on GitHub, or an export file of the same shape."""

    pr_number = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_VERSION, label="PR number", help_text="read from GitHub"
    )
    pr_export = forms.FileField(
        required=False,
        label="PR export (JSON)",
        help_text='{"pull", "files", "review_comments", "reviews", "issue_comments"} as GitHub returns them',
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        upload = cleaned.get("pr_export")
        limit = int(settings.RUBRIC_UPLOAD_MAX_BYTES)
        if upload is not None and upload.size is not None and upload.size > limit:
            self.add_error("pr_export", f"The file is larger than {limit // 1024} KiB.")
        if not self.errors and (cleaned.get("pr_number") is None) == (upload is None):
            raise forms.ValidationError("Give a PR number or a PR export file (one of them).")
        return cleaned
