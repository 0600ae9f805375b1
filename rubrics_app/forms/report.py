"""The report page's form: the repository's training cutoffs (§7 contamination)."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from grading import InputError, parse_date, parse_json

MAX_MODEL_ID = 200  # AgentRun.model


class CutoffsForm(forms.Form):
    """The cutoffs as ``rubric report --cutoffs FILE`` reads them: a JSON object, model id -> YYYY-MM-DD.
    The same text for both, so a maintainer can paste the file the command line uses (or copy this one)."""

    cutoffs = forms.CharField(
        label='Training cutoffs: {"<model id>": "YYYY-MM-DD", ...}',
        required=False,
        max_length=100_000,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
    )

    @staticmethod
    def initial_text(cutoffs: dict[str, Any]) -> str:
        return json.dumps(cutoffs, indent=2, sort_keys=True, ensure_ascii=False) if cutoffs else ""

    def clean_cutoffs(self) -> dict[str, str]:
        text = self.cleaned_data["cutoffs"].strip()
        if not text:
            return {}
        try:
            data = parse_json(text.encode("utf-8"), "cutoffs")
        except InputError as exc:
            raise forms.ValidationError(str(exc)) from None
        if not isinstance(data, dict):
            raise forms.ValidationError('cutoffs: expected a JSON object {"<model id>": "YYYY-MM-DD", ...}')
        cleaned: dict[str, str] = {}
        for model, value in data.items():
            if not model.strip() or len(model) > MAX_MODEL_ID or not model.isprintable():
                raise forms.ValidationError(
                    f"cutoffs: {model[:40]!r}: a model id is printable text of 1 to {MAX_MODEL_ID} characters"
                )
            try:
                cleaned[model] = parse_date(value, "cutoffs", model).isoformat()
            except InputError as exc:
                raise forms.ValidationError(str(exc)) from None
        return cleaned
