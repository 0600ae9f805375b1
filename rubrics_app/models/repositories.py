"""Repositories, who may do what in each, and each repository's judge and drafting settings."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from grading import TestsConfig

ITEM_ID_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
name_validator = RegexValidator(
    ITEM_ID_RE, "letters, digits, '.', '_' and '-', starting with a letter or digit"
)


class Role(models.TextChoices):
    MAINTAINER = "maintainer", "Maintainer"  # edit, approve, admit, export
    REVIEWER = "reviewer", "Reviewer"  # comment, label judge disagreements
    VIEWER = "viewer", "Viewer"  # read


class Repository(models.Model):
    name = models.CharField(max_length=100, unique=True, validators=[name_validator])
    checkout_path = models.CharField(max_length=1000, blank=True, help_text="the repository's working tree")
    # Held-out rubrics (§7 contamination) are exported here instead of into the public checkout.
    private_path = models.CharField(max_length=1000, blank=True)
    # The manifest's `tests` block (§3), read through grading.schema.TestsConfig.
    tests_config = models.JSONField(default=dict, blank=True)
    guidance = models.TextField(blank=True)
    # §7 contamination: full model id -> its training cutoff "YYYY-MM-DD" (the report page splits cells by
    # each task's base_date against it). Edited by maintainers through forms.report.CutoffsForm. Null, not
    # default={}: SQLite adds a nullable column in place, where a NOT NULL one rebuilds the table and
    # would drop migration 0006's freeze triggers on it.
    training_cutoffs = models.JSONField(null=True, blank=True)
    # How many reviewers label each queue pair before it leaves the queue (§4): more than one measures
    # agreement between humans, and a disagreement goes to the maintainers' adjudication list.
    labels_per_pair = models.PositiveSmallIntegerField(default=1, db_default=1)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "repositories"

    def __str__(self) -> str:
        return self.name

    def tests(self) -> TestsConfig:
        return TestsConfig.model_validate(self.tests_config or {})

    def judge_setting(self) -> JudgeSetting | None:
        """The repository's judges as stored now (not the cached ``judges`` relation), or None when none are
        set: the one lookup of them."""
        return JudgeSetting.objects.filter(repository_id=self.pk).first()


class Membership(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)

    class Meta:
        constraints = [
            # One role per person per repository: the access helper reads exactly one row.
            models.UniqueConstraint(fields=["repository", "user"], name="one_role_per_user_and_repository"),
        ]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.repository}"


class JudgeSetting(models.Model):
    """A repository's judges: the primary one decides calibration (and grading); the second, from another
    model family, is only compared with it. Specs as the `rubric` command takes them (full model ids).
    API keys are never here: they come from the worker's environment."""

    repository = models.OneToOneField(Repository, on_delete=models.CASCADE, related_name="judges")
    judge = models.CharField(max_length=500)  # the primary judge
    second_judge = models.CharField(max_length=500, blank=True)
    decoding = models.JSONField(default=dict, blank=True)  # the primary judge's, e.g. {"temperature": 0}
    second_decoding = models.JSONField(default=dict, blank=True)
    # No calibration starts once this month's calibration cost reached it (None: no cap).
    monthly_cap_usd = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    # Sweeps send their judge calls through the provider's batch API: half price, answers within hours.
    sweep_batch = models.BooleanField(default=False)
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    def __str__(self) -> str:
        second = f" + {self.second_judge}" if self.second_judge else ""
        return f"judges of {self.repository}: {self.judge}{second}"

    @staticmethod
    def is_scripted(spec: str) -> bool:
        return spec.startswith("scripted:")

    @staticmethod
    def judge_name(spec: str) -> str:
        """What a list calls the judge of ``spec``: its model id, or "scripted" (its spec is a file path)."""
        if JudgeSetting.is_scripted(spec):
            return "scripted"
        return spec.partition(":")[2] or spec


def default_guidance_globs() -> list[str]:
    # Imported here: grading.draft loads the model SDKs, which pages that never draft do not need.
    from grading import DEFAULT_GUIDANCE_GLOBS

    return list(DEFAULT_GUIDANCE_GLOBS)


class DraftSetting(models.Model):
    """How a repository's rubrics are drafted (§6): where its merged PRs are read and by which model.

    The GitHub token is never here: ``token_env`` names the variable of the worker's environment that holds
    it (GITHUB_TOKEN or GITHUB_TOKEN_<SUFFIX>, so no other secret of the worker can be named)."""

    repository = models.OneToOneField(Repository, on_delete=models.CASCADE, related_name="draft_setting")
    github_repository = models.CharField(max_length=200, blank=True)  # OWNER/NAME; blank: exports only
    use_token = models.BooleanField(default=False)
    token_env = models.CharField(max_length=100, blank=True, default="GITHUB_TOKEN")
    guidance_globs = models.JSONField(default=default_guidance_globs, blank=True)
    drafter = models.CharField(max_length=500)  # anthropic:<full model id>
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    def __str__(self) -> str:
        return f"drafting of {self.repository}: {self.drafter}"


class RemoteSetting(models.Model):
    """Where a repository's admitted rubrics are sent as a branch (§6 export): its remote, a GitHub
    ``OWNER/NAME`` (a pull request is opened there) or any git URL (the branch is pushed, no pull request).

    The token is never here, as in drafting: ``token_env`` names the variable of the worker's environment
    that holds it (GITHUB_TOKEN or GITHUB_TOKEN_<SUFFIX>; blank: push without one)."""

    repository = models.OneToOneField(Repository, on_delete=models.CASCADE, related_name="remote_setting")
    remote = models.CharField(max_length=500)
    token_env = models.CharField(max_length=100, blank=True)
    base_branch = models.CharField(max_length=200, default="main")  # the pull request's base
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    def __str__(self) -> str:
        return f"remote of {self.repository}: {self.remote}"
