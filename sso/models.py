"""Memberships granted by the e-mail domain of people who sign in with single sign-on."""

from __future__ import annotations

from django.db import models

from annotation.models import Project, Role


class DomainMembership(models.Model):
    """Everyone who signs in with single sign-on and an address the provider verified at
    ``domain`` (exactly that domain, not its subdomains) gets ``role`` in ``project`` — on their
    first sign-in and every later one, so a rule added later reaches people already known.
    Removing the rule removes nobody's membership."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sso_domains")
    domain = models.CharField(
        max_length=253, help_text="The part after @, e.g. uni.example (lower case)."
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "domain", "role"], name="sso_domain_membership_unique"
            )
        ]
        indexes = [models.Index(fields=["domain"])]

    def __str__(self) -> str:
        return f"@{self.domain} → {self.role} in {self.project}"

    def save(self, *args, **kwargs):
        self.domain = self.domain.strip().lower().lstrip("@")
        super().save(*args, **kwargs)
