"""A form with errors never leaves the browser on a URL that only accepts POST.

Actions post to URLs of their own (``.../draft/``, ``.../import/``); re-rendering the page there on an error
left the browser on that URL, and reloading it answered 405. Post/redirect/get instead: the submitted values
(never the files) and the errors are kept in the session, the browser is sent to the page the form is on,
and that page's view puts the form back, bound and with its errors, where the empty form would have been.
The page then answers GET like any other, and a reload shows the page without the errors, as a new visit
would. Under htmx nothing moves (the errors are swapped into the page), so only plain posts come here.

One form is kept at a time, per session: the latest post that failed. A page takes it only when it is its
own (the ``key``), so an old error never shows up on another page."""

from __future__ import annotations

from typing import Any, NamedTuple

from django import forms
from django.core.exceptions import ValidationError
from django.forms.utils import ErrorDict
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.datastructures import MultiValueDict

SESSION_KEY = "rubrics_kept_form"
# What one kept form may carry into the session: import problems can run to thousands of lines.
MAX_PROBLEMS = 200


class Kept[FormT: forms.BaseForm](NamedTuple):
    form: FormT | None  # None: nothing kept for this page
    problems: list[str]
    target: int | None  # which of the page's forms of this kind (a mutant's), when there are several


def form_key(action: str, pk: int) -> str:
    """The key of the form that posts to the URL named ``action`` for the object ``pk``: the action's view
    keeps it under this key and the page's view takes it with the same."""
    return f"{action}:{pk}"


def redirect_with_form(
    request: HttpRequest,
    url: str,
    key: str,
    form: forms.BaseForm,
    problems: list[str] | None = None,
    *,
    target: int | None = None,
) -> HttpResponse:
    """Keep ``form``'s values and errors (and ``problems`` found past the form, such as an import's, and
    the ``target`` it was about) for the page at ``url``, which shows them through :func:`kept_form` with
    the same ``key``; send the browser there."""
    problems = list(problems or [])
    if len(problems) > MAX_PROBLEMS:
        problems = [*problems[:MAX_PROBLEMS], f"… and {len(problems) - MAX_PROBLEMS} more problems"]
    request.session[SESSION_KEY] = {
        "key": key,
        "data": [[name, values] for name, values in _values(form) if name != "csrfmiddlewaretoken"],
        "errors": {field: [str(message) for message in errors] for field, errors in form.errors.items()},
        "problems": problems,
        "target": target,
    }
    return HttpResponseRedirect(url)


def _values(form: forms.BaseForm) -> list[tuple[str, list[Any]]]:
    """Every value of every field, as sent (a bound form's data is the request's QueryDict)."""
    if isinstance(form.data, MultiValueDict):
        return list(form.data.lists())
    return [(name, [value]) for name, value in form.data.items()]


def kept_form[FormT: forms.BaseForm](
    request: HttpRequest, key: str, form_class: type[FormT], **kwargs: Any
) -> Kept[FormT]:
    """The form kept for ``key`` by :func:`redirect_with_form`, bound to the values sent and with their
    errors (not validated again: the files are not kept, so a second validation would only find them
    missing), and the problems and target kept with it; an empty Kept when nothing was kept. Taken
    once: the next visit shows the page afresh."""
    kept = request.session.get(SESSION_KEY)
    if not isinstance(kept, dict) or kept.get("key") != key:
        return Kept(None, [], None)
    del request.session[SESSION_KEY]
    data: MultiValueDict[str, Any] = MultiValueDict(dict(kept["data"]))
    form = form_class(data, **kwargs)
    form._errors = ErrorDict()  # type: ignore[attr-defined]  # as they were found, not validated again
    form.cleaned_data = {}
    for field, messages in kept["errors"].items():
        form.add_error(None if field == "__all__" or field not in form.fields else field,
                       ValidationError(messages))  # fmt: skip
    target = kept.get("target")
    problems = [str(problem) for problem in kept["problems"]]
    return Kept(form, problems, target if isinstance(target, int) else None)
