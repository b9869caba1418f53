"""Print the OIDC_* environment lines for a provider, read from its discovery document."""

from __future__ import annotations

import requests
from django.core.management.base import BaseCommand, CommandError

FIELDS = {
    "OIDC_OP_ISSUER": "issuer",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


class Command(BaseCommand):
    help = (
        "Read <issuer>/.well-known/openid-configuration and print the environment lines "
        "Rungwise's single sign-on needs (add OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET)."
    )

    def add_arguments(self, parser):
        parser.add_argument("issuer", help="e.g. https://login.uni.example/realms/lab")

    def handle(self, *args, issuer: str, **options):
        url = issuer.rstrip("/") + "/.well-known/openid-configuration"
        try:
            response = requests.get(url, timeout=10)
            response.raise_for_status()
            document = response.json()
        except (requests.RequestException, ValueError) as error:
            raise CommandError(f"Could not read {url}: {error}") from error
        missing = [key for key in FIELDS.values() if not document.get(key)]
        if missing:
            raise CommandError(f"{url} has no {', '.join(missing)}.")
        for env, key in FIELDS.items():
            self.stdout.write(f"{env}={document[key]}")
