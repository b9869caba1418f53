"""A small local stand-in for the Hugging Face Hub: the endpoints ``huggingface_hub`` (2.x) calls
to push a folder, answered as the Hub answers them (read off the client: ``HfApi.whoami``,
``create_repo``, ``list_repo_tree`` for ``upload_folder``'s ``delete_patterns``,
``_fetch_upload_modes`` (preupload), ``_validate_yaml``, ``_send_commit`` (the NDJSON commit)).

* A token in ``read_only`` gets 403 on every write (create, preupload, commit).
* ``GET /api/whoami-v2`` — the token's account and organisations; 401 for an unknown token.
* ``POST /api/repos/create`` — creates ``organization/name`` when the token's account is that
  namespace or one of its organisations (403 otherwise); 409 when it exists.
* ``GET /api/datasets/<owner>/<name>/tree/<revision>[/<path>]`` — the repository's files
  (``recursive``); 404 for a repository the token may not read.
* ``POST /api/datasets/<owner>/<name>/preupload/<revision>`` — every file uploads as
  ``regular`` (its bytes in the commit, base64): the server decides the mode, and this one never
  asks for LFS, so no large-file storage is needed; 403 for a repository of another account.
* ``POST /api/validate-yaml`` — 400 with the error when the README's front matter is not YAML.
* ``POST /api/datasets/<owner>/<name>/commit/<revision>`` — applies ``file`` / ``deletedFile`` /
  ``deletedFolder`` lines and answers the new commit's id (a SHA-1 of the tree).

State lives in ``HubServer.repos``: ``{repo_id: Repo(owner, private, files={path: bytes},
commits=[oid])}``. Start with ``HubServer.start(tokens={"tok": ("alice", ["lab"])})``; its
``url`` is the ``HF_ENDPOINT``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import yaml


@dataclass
class Repo:
    owner: str
    private: bool
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)


class HubServer:
    def __init__(self, tokens: dict[str, tuple[str, list[str]]]) -> None:
        self.tokens = tokens
        #: Tokens that may read but not write (a "read" token of the Hub): 403 on every write.
        self.read_only: set[str] = set()
        self.repos: dict[str, Repo] = {}
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                hub._handle(self, "GET")

            def do_POST(self) -> None:
                hub._handle(self, "POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @classmethod
    def start(cls, tokens: dict[str, tuple[str, list[str]]]) -> HubServer:
        server = cls(tokens)
        server._thread.start()
        return server

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- the protocol --------------------------------------------------------------------------

    def _account(self, handler: BaseHTTPRequestHandler) -> tuple[str, list[str]] | None:
        header = handler.headers.get("authorization", "")
        token = header.removeprefix("Bearer ").strip()
        return self.tokens.get(token)

    @staticmethod
    def _reply(handler: BaseHTTPRequestHandler, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        if status >= 400 and isinstance(body, dict) and "error" in body:
            handler.send_header("X-Error-Message", body["error"])
        handler.end_headers()
        handler.wfile.write(data)

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        url = urlparse(handler.path)
        path = unquote(url.path)
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length) if length else b""
        with self.lock:
            self.requests.append((method, path))
            account = self._account(handler)
            if account is None:
                return self._reply(
                    handler, 401, {"error": "Invalid credentials in Authorization header"}
                )
            user, orgs = account
            token = handler.headers.get("authorization", "").removeprefix("Bearer ").strip()
            if method == "POST" and token in self.read_only and path != "/api/validate-yaml":
                return self._reply(handler, 403, {"error": "This token has read access only"})
            if method == "GET" and path == "/api/whoami-v2":
                return self._reply(
                    handler,
                    200,
                    {"type": "user", "name": user, "orgs": [{"name": org} for org in orgs]},
                )
            if method == "POST" and path == "/api/repos/create":
                request = json.loads(body)
                namespace = request.get("organization") or user
                repo_id = f"{namespace}/{request['name']}"
                if namespace not in {user, *orgs}:
                    return self._reply(
                        handler,
                        403,
                        {
                            "error": "You don't have the rights to create a dataset under this namespace"
                        },
                    )
                if repo_id in self.repos:
                    return self._reply(
                        handler,
                        409,
                        {
                            "error": "You already created this dataset repo",
                            "url": f"{self.url}/datasets/{repo_id}",
                        },
                    )
                self.repos[repo_id] = Repo(user, request.get("visibility") == "private")
                return self._reply(handler, 200, {"url": f"{self.url}/datasets/{repo_id}"})
            if method == "POST" and path == "/api/validate-yaml":
                content = json.loads(body)["content"]
                try:
                    if content.startswith("---\n"):
                        yaml.safe_load(content.split("---\n")[1])
                except yaml.YAMLError as error:
                    return self._reply(handler, 400, {"errors": [{"message": str(error)}]})
                return self._reply(handler, 200, {"errors": [], "warnings": []})
            parts = path.split("/")
            # /api/datasets/<owner>/<name>/<action>/<revision>[/<path>...]
            if len(parts) < 7 or parts[:3] != ["", "api", "datasets"]:
                return self._reply(handler, 404, {"error": f"no route {method} {path}"})
            repo_id, action = f"{parts[3]}/{parts[4]}", parts[5]
            repo = self.repos.get(repo_id)
            if repo is None or (repo.owner != user and repo.owner not in orgs):
                status = 404 if repo is None or repo.private else 403
                return self._reply(handler, status, {"error": "Repository not found"})
            if method == "GET" and action == "tree":
                prefix = "/".join(parts[7:])
                listing = [
                    {"type": "file", "path": name, "size": len(data), "oid": _blob(data)}
                    for name, data in sorted(repo.files.items())
                    if not prefix or name.startswith(prefix.rstrip("/") + "/")
                ]
                if "recursive" not in parse_qs(url.query):
                    listing = [
                        entry
                        for entry in listing
                        if "/" not in entry["path"][len(prefix) :].strip("/")
                    ]
                return self._reply(handler, 200, listing)
            if method == "POST" and action == "preupload":
                files = json.loads(body)["files"]
                return self._reply(
                    handler,
                    200,
                    {
                        "files": [
                            {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                            for f in files
                        ]
                    },
                )
            if method == "POST" and action == "commit":
                return self._commit(handler, repo_id, repo, body)
            return self._reply(handler, 404, {"error": f"no route {method} {path}"})

    def _commit(
        self, handler: BaseHTTPRequestHandler, repo_id: str, repo: Repo, body: bytes
    ) -> None:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0]["key"] != "header":
            return self._reply(handler, 400, {"error": "the commit starts with its header"})
        for line in lines[1:]:
            value = line["value"]
            if line["key"] == "file":
                if value.get("encoding") != "base64":
                    return self._reply(handler, 400, {"error": "files are base64"})
                repo.files[value["path"]] = base64.b64decode(value["content"])
            elif line["key"] == "deletedFile":
                repo.files.pop(value["path"], None)
            elif line["key"] == "deletedFolder":
                prefix = value["path"].rstrip("/") + "/"
                for name in [name for name in repo.files if name.startswith(prefix)]:
                    del repo.files[name]
            else:
                return self._reply(handler, 400, {"error": f"{line['key']} is not taken here"})
        tree = hashlib.sha1(usedforsecurity=False)
        for name, data in sorted(repo.files.items()):
            tree.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        tree.update(str(len(repo.commits)).encode())
        oid = tree.hexdigest()
        repo.commits.append(oid)
        return self._reply(
            handler,
            200,
            {
                "commitUrl": f"{self.url}/datasets/{repo_id}/commit/{oid}",
                "commitOid": oid,
                "success": True,
            },
        )


def _blob(data: bytes) -> str:
    """A git blob id, as the Hub's tree gives it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
