from __future__ import annotations

from typing import Any

from django import forms

from rubrics_app.models import Repository, Role


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="what the token is for, e.g. the harness that uses it")
    repositories = forms.ModelMultipleChoiceField(
        queryset=Repository.objects.none(), widget=forms.CheckboxSelectMultiple
    )
    role = forms.ChoiceField(
        choices=Role.choices, initial=Role.VIEWER, help_text="no higher than yours on each repository"
    )
    days = forms.IntegerField(min_value=1, initial=90, label="Expires in (days)")

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["repositories"]
        assert isinstance(field, forms.ModelMultipleChoiceField)
        field.queryset = Repository.objects.filter(memberships__user_id=user.pk).order_by("name")
