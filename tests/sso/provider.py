"""A local OpenID provider for the tests: the endpoints of the OpenID Connect code flow
(discovery, authorize, token, userinfo, JWKS) over real HTTP on 127.0.0.1, RS256 id tokens,
PKCE (S256), one-use codes. It approves whoever the test says is signed in at the provider
(``provider.signed_in``), so a test drives the flow without a login page of its own.
``token_overrides`` change the next id tokens' claims (another audience, another nonce …) and
``sign_with_other_key`` makes them fail signature checks."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENT_ID = "rungwise-test"
CLIENT_SECRET = "s3cret-for-tests"
KID = "test-key-1"


class Provider:
    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.signed_in: dict | None = None
        self.token_overrides: dict = {}
        self.sign_with_other_key = False
        self.codes: dict[str, dict] = {}
        self.access: dict[str, dict] = {}
        self.token_requests = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def settings(self) -> dict:
        """The Django settings that point Rungwise at this provider."""
        return {
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_OP_ISSUER": self.issuer,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": self.issuer + "/authorize",
            "OIDC_OP_TOKEN_ENDPOINT": self.issuer + "/token",
            "OIDC_OP_USER_ENDPOINT": self.issuer + "/userinfo",
            "OIDC_OP_JWKS_ENDPOINT": self.issuer + "/jwks",
            "RUNGWISE_SSO_NAME": "Test University",
        }

    def start(self) -> Provider:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _id_token(self, grant: dict) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": grant["claims"]["sub"],
            "aud": CLIENT_ID,
            "iat": now,
            "exp": now + 300,
            "nonce": grant["nonce"],
            "email": grant["claims"].get("email"),
        }
        claims.update(self.token_overrides)
        key = self.other_key if self.sign_with_other_key else self.key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID})

    def _handler(self):
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _json(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/.well-known/openid-configuration":
                    base = provider.issuer
                    return self._json(
                        200,
                        {
                            "issuer": base,
                            "authorization_endpoint": base + "/authorize",
                            "token_endpoint": base + "/token",
                            "userinfo_endpoint": base + "/userinfo",
                            "jwks_uri": base + "/jwks",
                            "response_types_supported": ["code"],
                            "id_token_signing_alg_values_supported": ["RS256"],
                        },
                    )
                if url.path == "/jwks":
                    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(
                        provider.key.public_key(), as_dict=True
                    )
                    jwk.update(kid=KID, alg="RS256", use="sig")
                    return self._json(200, {"keys": [jwk]})
                if url.path == "/authorize":
                    if query.get("client_id") != CLIENT_ID or query.get("response_type") != "code":
                        return self._json(400, {"error": "invalid_request"})
                    if provider.signed_in is None:
                        target = (
                            query["redirect_uri"]
                            + "?"
                            + urlencode({"error": "access_denied", "state": query.get("state", "")})
                        )
                    else:
                        code = secrets.token_urlsafe(16)
                        provider.codes[code] = {
                            "claims": dict(provider.signed_in),
                            "nonce": query.get("nonce"),
                            "redirect_uri": query["redirect_uri"],
                            "challenge": query.get("code_challenge"),
                        }
                        target = (
                            query["redirect_uri"]
                            + "?"
                            + urlencode({"code": code, "state": query["state"]})
                        )
                    self.send_response(302)
                    self.send_header("Location", target)
                    self.end_headers()
                    return None
                if url.path == "/userinfo":
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    grant = provider.access.get(token)
                    if grant is None:
                        return self._json(401, {"error": "invalid_token"})
                    return self._json(200, grant["claims"])
                return self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                if urlparse(self.path).path != "/token":
                    return self._json(404, {"error": "not_found"})
                length = int(self.headers.get("Content-Length", "0"))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                provider.token_requests += 1
                grant = provider.codes.pop(form.get("code", ""), None)
                if (
                    grant is None
                    or form.get("client_id") != CLIENT_ID
                    or form.get("client_secret") != CLIENT_SECRET
                    or form.get("redirect_uri") != grant["redirect_uri"]
                ):
                    return self._json(400, {"error": "invalid_grant"})
                if grant["challenge"]:
                    digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
                    expected = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
                    if expected != grant["challenge"]:
                        return self._json(400, {"error": "invalid_grant"})
                access_token = secrets.token_urlsafe(16)
                provider.access[access_token] = grant
                return self._json(
                    200,
                    {
                        "access_token": access_token,
                        "token_type": "Bearer",
                        "expires_in": 300,
                        "id_token": provider._id_token(grant),
                    },
                )

        return Handler
