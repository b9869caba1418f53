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
* ``POST /api/datasets/<owner>/<name>/preupload/<revision>`` — the server decides each file's
  mode as the Hub's default ``.gitattributes`` does: ``lfs`` for binary formats (``.parquet``,
  ``.arrow``, ``.zip``, … — ``LFS_SUFFIXES``), for files of 10 MiB or more and for samples holding
  a NUL byte; ``regular`` (its bytes in the commit, base64) otherwise, e.g. ``README.md``; 403 for
  a repository of another account.
* ``POST /datasets/<owner>/<name>.git/info/lfs/objects/batch`` — the Git LFS batch API (upload),
  offering only the ``basic`` transfer (no Xet): each object not stored yet gets an ``upload``
  action (a pre-signed PUT, as the Hub's S3 URL, no token) and a ``verify`` action; an object
  already stored is answered without actions.
* ``PUT /lfs-upload/<oid>?size=…&sig=…`` — stores the object after checking its sha256 and size
  (400 otherwise); ``HubServer.refuse_uploads`` set to a status makes it answer that instead.
* ``POST /lfs-verify/<owner>/<name>`` — 200 when the object is stored with that size, 404 if not.
* ``POST /api/validate-yaml`` — 400 with the error when the README's front matter is not YAML.
* ``POST /api/datasets/<owner>/<name>/commit/<revision>`` — applies ``file`` / ``lfsFile`` (which
  must name a stored object of that size) / ``deletedFile`` / ``deletedFolder`` lines and answers the new commit's id (a SHA-1 of the tree).

State lives in ``HubServer.repos``: ``{repo_id: Repo(owner, private, files={path: bytes},
commits=[oid], lfs={paths committed as LFS pointers})}``; LFS objects in ``HubServer.lfs_objects``
(``{sha256: bytes}``), and every object a PUT stored in ``HubServer.lfs_uploads`` (in order). Start with ``HubServer.start(tokens={"tok": ("alice", ["lab"])})``; its
``url`` is the ``HF_ENDPOINT``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
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
    #: The paths whose last commit was an ``lfsFile`` (a pointer to an LFS object).
    lfs: set[str] = field(default_factory=set)


#: The binary formats the Hub's default ``.gitattributes`` stores through LFS (a subset: the
#: ones a dataset folder holds).
LFS_SUFFIXES = (
    ".parquet", ".arrow", ".avro", ".bin", ".gz", ".npy", ".npz", ".pkl", ".tar", ".zip",
    ".zst", ".jpg", ".png", ".wav", ".mp3",
)  # fmt: skip
#: Files of this size or more go through LFS whatever their name (the Hub's 10 MiB rule).
LFS_MIN_SIZE = 10 * 1024 * 1024


class HubServer:
    def __init__(self, tokens: dict[str, tuple[str, list[str]]]) -> None:
        self.tokens = tokens
        #: Tokens that may read but not write (a "read" token of the Hub): 403 on every write.
        self.read_only: set[str] = set()
        self.repos: dict[str, Repo] = {}
        self.requests: list[tuple[str, str]] = []
        #: LFS objects stored by a PUT: ``{sha256 hex: bytes}`` (shared by all repositories).
        self.lfs_objects: dict[str, bytes] = {}
        #: The oids of the objects PUT requests stored, in order (a second push adds none).
        self.lfs_uploads: list[str] = []
        #: When set, every LFS PUT is answered with this status (a refused upload).
        self.refuse_uploads: int | None = None
        self._signature = secrets.token_hex(8)
        self.lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                hub._handle(self, "GET")

            def do_POST(self) -> None:
                hub._handle(self, "POST")

            def do_PUT(self) -> None:
                hub._handle(self, "PUT")

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
            if method == "PUT" and path.startswith("/lfs-upload/"):
                # A pre-signed storage URL: no token, the signature in the query is the right.
                return self._lfs_put(handler, path.rsplit("/", 1)[1], parse_qs(url.query), body)
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
            if method == "POST" and path.endswith(".git/info/lfs/objects/batch"):
                repo_id = path.removeprefix("/datasets/").removesuffix(
                    ".git/info/lfs/objects/batch"
                )
                return self._lfs_batch(handler, repo_id, user, orgs, body)
            if method == "POST" and path.startswith("/lfs-verify/"):
                request = json.loads(body)
                stored = self.lfs_objects.get(request["oid"])
                if stored is None or len(stored) != request["size"]:
                    return self._reply(handler, 404, {"error": "Object not found"})
                return self._reply(handler, 200, {"success": True})
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
                    | (
                        {
                            "lfs": {
                                "oid": hashlib.sha256(data).hexdigest(),
                                "size": len(data),
                                "pointerSize": 134,
                            }
                        }
                        if name in repo.lfs
                        else {}
                    )
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
                            {"path": f["path"], "uploadMode": _mode(f), "shouldIgnore": False}
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
                repo.lfs.discard(value["path"])
            elif line["key"] == "lfsFile":
                stored = self.lfs_objects.get(value.get("oid", ""))
                if value.get("algo") != "sha256" or stored is None:
                    return self._reply(
                        handler, 400, {"error": f"LFS object of {value['path']} is not uploaded"}
                    )
                if "size" in value and value["size"] != len(stored):
                    return self._reply(handler, 400, {"error": f"{value['path']}: size mismatch"})
                repo.files[value["path"]] = stored
                repo.lfs.add(value["path"])
            elif line["key"] == "deletedFile":
                repo.files.pop(value["path"], None)
                repo.lfs.discard(value["path"])
            elif line["key"] == "deletedFolder":
                prefix = value["path"].rstrip("/") + "/"
                for name in [name for name in repo.files if name.startswith(prefix)]:
                    del repo.files[name]
                    repo.lfs.discard(name)
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

    def _lfs_batch(
        self,
        handler: BaseHTTPRequestHandler,
        repo_id: str,
        user: str,
        orgs: list[str],
        body: bytes,
    ) -> None:
        repo = self.repos.get(repo_id)
        if repo is None or (repo.owner != user and repo.owner not in orgs):
            return self._reply(handler, 404, {"message": "Repository not found"})
        request = json.loads(body)
        if request.get("operation") != "upload" or "basic" not in request.get("transfers", []):
            return self._reply(handler, 422, {"message": "only basic uploads are offered"})
        objects = []
        for item in request["objects"]:
            answer: dict[str, Any] = {"oid": item["oid"], "size": item["size"]}
            if item["oid"] not in self.lfs_objects:
                answer["authenticated"] = True
                answer["actions"] = {
                    "upload": {
                        "href": f"{self.url}/lfs-upload/{item['oid']}"
                        f"?size={item['size']}&sig={self._signature}",
                        "header": {},
                    },
                    "verify": {"href": f"{self.url}/lfs-verify/{repo_id}", "header": {}},
                }
            objects.append(answer)
        return self._reply(handler, 200, {"transfer": "basic", "objects": objects})

    def _lfs_put(
        self, handler: BaseHTTPRequestHandler, oid: str, query: dict[str, list[str]], body: bytes
    ) -> None:
        if query.get("sig") != [self._signature]:
            return self._reply(handler, 403, {"error": "Request signature does not match"})
        if self.refuse_uploads is not None:
            return self._reply(handler, self.refuse_uploads, {"error": "Upload refused"})
        if hashlib.sha256(body).hexdigest() != oid or query.get("size") != [str(len(body))]:
            return self._reply(handler, 400, {"error": "Content does not match its oid or size"})
        self.lfs_objects[oid] = body
        self.lfs_uploads.append(oid)
        return self._reply(handler, 200, {})


def _mode(file: dict[str, Any]) -> str:
    """The upload mode the Hub gives a file of the preupload request (its default rules)."""
    sample = base64.b64decode(file.get("sample") or "")
    binary = file["path"].lower().endswith(LFS_SUFFIXES) or b"\0" in sample
    return "lfs" if binary or file.get("size", 0) >= LFS_MIN_SIZE else "regular"


def _blob(data: bytes) -> str:
    """A git blob id, as the Hub's tree gives it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
