"""A person's own account beyond Django's sign-in and password views (rungwise/urls.py): the
e-mail address changed by a signed link mailed to the new address.

The link carries the account, its current address and the new one, signed with the site's
``SECRET_KEY`` and valid for ``PASSWORD_RESET_TIMEOUT`` seconds (django.core.signing); it does
nothing once the address changed again, and it changes the address only when its page's button
is pressed (a mail scanner that opens links changes nothing). Django only: this module sits
below every app (pyproject.toml's layers)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.mail import send_mail
from django.db import transaction
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

SALT = "rungwise.accounts.email-change"


class EmailChangeForm(forms.Form):
    """The new address, and the password as proof that the person at the keyboard owns the
    account (a session left open does not let anyone redirect its mail)."""

    email = forms.EmailField(label="New e-mail address", max_length=254)
    password = forms.CharField(
        label="Your password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError("That is not your password.", code="password_incorrect")
        return password

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip()
        if email.lower() == (self.user.email or "").lower():
            raise forms.ValidationError("That is already your address.", code="same")
        return email


def email_change_link(*, user: Any, email: str) -> str:
    """The signed token of a change of ``user``'s address to ``email``."""
    return signing.dumps({"user": user.pk, "old": user.email or "", "new": email}, salt=SALT)


def email_change_read(token: str) -> dict[str, Any] | None:
    """What a token asks (user id, old and new address), or None when it is forged, expired
    or the account's address is no longer the one it was made for."""
    try:
        asked = signing.loads(token, salt=SALT, max_age=settings.PASSWORD_RESET_TIMEOUT)
    except signing.BadSignature:
        return None
    user = get_user_model().objects.filter(pk=asked.get("user"), is_active=True).first()
    if user is None or (user.email or "") != asked.get("old"):
        return None
    return {"user": user, "new": asked["new"]}


@require_http_methods(["GET", "POST"])
@login_required
def email_change(request):
    """GET: the form. POST: a confirmation link mailed to the new address; nothing changes
    until it is followed."""
    form = EmailChangeForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        email = form.cleaned_data["email"]
        token = email_change_link(user=request.user, email=email)
        link = request.build_absolute_uri(reverse("email_change_confirm", args=[token]))
        days = settings.PASSWORD_RESET_TIMEOUT // 86_400
        send_mail(
            "Confirm your new e-mail address on Rungwise",
            f"Someone (we hope you) asked to use this address for the Rungwise account "
            f"{request.user.get_username()}.\n\nConfirm it within {days} days:\n{link}\n\n"
            "If it was not you, ignore this message: nothing changes.",
            None,
            [email],
        )
        messages.success(
            request, f"We sent a link to {email}. Your address changes when you follow it."
        )
        return redirect("email_change")
    status = 400 if form.errors else 200
    return render(request, "registration/email_change_form.html", {"form": form}, status=status)


@require_http_methods(["GET", "POST"])
def email_change_confirm(request, token: str):
    """GET: what the link changes, with a button. POST: the address changed."""
    asked = email_change_read(token)
    if asked is None:
        return render(
            request, "registration/email_change_confirm.html", {"invalid": True}, status=400
        )
    if request.method == "POST":
        with transaction.atomic():
            user = get_user_model().objects.select_for_update().get(pk=asked["user"].pk)
            user.email = asked["new"]
            user.save(update_fields=["email"])
        messages.success(request, f"Your e-mail address is now {asked['new']}.")
        return redirect("annotation:home" if request.user.is_authenticated else "login")
    return render(
        request,
        "registration/email_change_confirm.html",
        {"username": asked["user"].get_username(), "email": asked["new"], "token": token},
    )
