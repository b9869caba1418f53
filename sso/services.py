"""Accounts and memberships of people who sign in with single sign-on."""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.api import membership_add
from sso.models import DomainMembership


def email_domain(email: str) -> str:
    """The lower-cased part after the last @ ('' when there is none)."""
    return email.rsplit("@", 1)[1].strip().lower() if "@" in email else ""


def username_for(email: str) -> str:
    """A free username from the e-mail's local part ('ada' for ada@uni.example, then 'ada-2',
    'ada-3' …), letters, digits and . _ - only."""
    User = get_user_model()
    base = re.sub(r"[^\w.\-]", "-", email.split("@", 1)[0]).strip("-.")[:120] or "user"
    candidate, n = base, 1
    while User.objects.filter(username__iexact=candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


@transaction.atomic
def user_create(*, email: str, first_name: str = "", last_name: str = ""):
    """A new account for a verified e-mail: no usable password (it signs in through the
    provider only), the memberships its domain grants."""
    User = get_user_model()
    user = User.objects.create_user(
        username_for(email), email=email, first_name=first_name[:150], last_name=last_name[:150]
    )
    user.set_unusable_password()
    user.save(update_fields=["password"])
    domain_memberships_grant(user=user, email=email)
    return user


def domain_memberships_grant(*, user, email: str) -> int:
    """Give ``user`` every membership a DomainMembership rule grants to ``email``'s domain in
    an active project (existing memberships are kept as they are). Returns how many rules
    matched."""
    rules = DomainMembership.objects.filter(
        domain=email_domain(email), project__is_active=True
    ).select_related("project")
    count = 0
    for rule in rules:
        membership_add(project=rule.project, user=user, role=rule.role)
        count += 1
    return count
