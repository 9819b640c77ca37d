"""A local emulator of the Hugging Face Hub's HTTP API, as a test fixture (the real Hub cannot be reached here).

It is a real HTTP server on 127.0.0.1 (run in a thread) that implements what `huggingface_hub` 2.4 and `datasets`
5.2 actually call (see ../shared/notes/STACK.md): create/delete repo, whoami, validate-yaml, preupload, commit
(NDJSON, base64 "regular" files), tree (recursive, paginated with a Link header), paths-info, tag, refs, commits,
repo info by revision, and HEAD/GET resolve with the headers the clients read (X-Repo-Commit, ETag, Content-Length,
Range). It keeps git-like state in memory: commits with parents, branches, tags, blob ids computed as git does.

Behaviour it shares with the Hub on purpose, because the publisher relies on it:
- a commit is all-or-nothing: the whole NDJSON body is parsed and checked before anything changes;
- `parentCommit` that is not the branch head fails with 412;
- private repos answer 404 RepoNotFound to anyone but their owner; writes need a token with rights on the namespace;
- validate-yaml rejects a card whose YAML header is not a mapping or whose configs/size_categories are malformed.
Known differences: files are never stored as LFS/Xet (preupload always answers "regular"); no pull requests.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import yaml

SIZE_CATEGORIES = [
    "n<1K",
    "1K<n<10K",
    "10K<n<100K",
    "100K<n<1M",
    "1M<n<10M",
    "10M<n<100M",
    "100M<n<1B",
    "1B<n<10B",
    "10B<n<100B",
    "100B<n<1T",
    "n>1T",
]
REPO_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}


def git_blob_oid(data: bytes) -> str:
    """The git blob id, as the Hub reports it for regular files (and huggingface_hub compares against)."""
    return hashlib.sha1(b"blob " + str(len(data)).encode() + b"\0" + data).hexdigest()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


@dataclass
class Commit:
    oid: str
    parent: str | None
    files: dict[str, bytes]
    title: str
    message: str
    date: str
    author: str


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    owner: str
    created_at: str = field(default_factory=_now)
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def resolve(self, rev: str) -> Commit | None:
        rev = unquote(rev)
        for prefix in ("refs/heads/", "refs/tags/"):
            if rev.startswith(prefix):
                rev = rev[len(prefix) :]
        oid = self.branches.get(rev) or self.tags.get(rev)
        if oid is None and rev in self.commits:
            oid = rev
        return self.commits.get(oid) if oid else None


class HubError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None, extra: dict[str, Any] | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.extra = status, message, code, extra or {}


class HubState:
    """Everything the emulated Hub holds. Thread-safe: one lock around every read-modify-write."""

    def __init__(self, tokens: dict[str, str], orgs: dict[str, list[str]] | None = None):
        self.tokens = dict(tokens)  # token -> user name
        self.orgs = dict(orgs or {})  # user -> organisations the user can write to
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lock = threading.RLock()
        self.requests: list[tuple[str, str]] = []  # (method, path) log, for tests that check what was called

    # -- auth --------------------------------------------------------------------------------------------------
    def user(self, headers) -> str | None:
        auth = headers.get("Authorization") or ""
        if not auth.startswith("Bearer "):
            return None
        token = auth[len("Bearer ") :].strip()
        if token not in self.tokens:
            raise HubError(401, "Invalid credentials in Authorization header")
        return self.tokens[token]

    def can_write(self, user: str | None, namespace: str) -> bool:
        return user is not None and (namespace == user or namespace in self.orgs.get(user, []))

    def repo(self, repo_type: str, repo_id: str, user: str | None, write: bool = False) -> Repo:
        r = self.repos.get((repo_type, repo_id))
        # Like the Hub: a private repo is indistinguishable from a missing one to anyone without access.
        if r is None or (r.private and not self.can_write(user, repo_id.split("/")[0])):
            raise HubError(404, f"Repository Not Found for url: {repo_type}s/{repo_id}.", "RepoNotFound")
        if write and not self.can_write(user, repo_id.split("/")[0]):
            raise HubError(403, f"You don't have the rights to write to {repo_id}")
        return r


def _commit_oid(parent: str | None, files: dict[str, bytes], title: str, date: str) -> str:
    h = hashlib.sha1()
    h.update((parent or "").encode() + b"\0" + title.encode() + b"\0" + date.encode())
    for path in sorted(files):
        h.update(path.encode() + b"\0" + git_blob_oid(files[path]).encode())
    return h.hexdigest()


def validate_card_yaml(content: str) -> list[dict[str, str]]:
    """Errors the Hub's validate-yaml would report for a README.md (a subset of its rules)."""
    m = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", content, re.S)
    if not m:
        return []  # no metadata: the Hub only warns
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        return [{"message": f"YAML header does not parse: {e}"}]
    if meta is None:
        return []
    if not isinstance(meta, dict):
        return [{"message": "YAML header must be a mapping"}]
    errors = []
    for key in ("tags", "task_categories", "size_categories"):
        if key in meta and not isinstance(meta[key], list):
            errors.append({"message": f'"{key}" must be an array'})
    for s in meta.get("size_categories") or []:
        if s not in SIZE_CATEGORIES:
            errors.append({"message": f'"size_categories[0]" must be one of {SIZE_CATEGORIES}, got {s!r}'})
    if "license" in meta and not isinstance(meta["license"], (str, list)):
        errors.append({"message": '"license" must be a string'})
    configs = meta.get("configs")
    if configs is not None:
        if not isinstance(configs, list):
            errors.append({"message": '"configs" must be an array'})
        else:
            for i, c in enumerate(configs):
                if not isinstance(c, dict) or not isinstance(c.get("config_name"), str):
                    errors.append({"message": f'"configs[{i}].config_name" is required'})
                    continue
                df = c.get("data_files")
                if df is not None and not isinstance(df, (str, list)):
                    errors.append({"message": f'"configs[{i}].data_files" must be a string or an array'})
                for j, item in enumerate(df if isinstance(df, list) else []):
                    if isinstance(item, dict) and not ({"split", "path"} <= set(item)):
                        errors.append({"message": f'"configs[{i}].data_files[{j}]" needs split and path'})
    return errors


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: HubState  # set on the subclass made per server

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet
        pass

    # -- plumbing ----------------------------------------------------------------------------------------------
    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _send(
        self,
        status: int,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
        head: bool = False,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers)

    def _dispatch(self, method: str) -> None:
        url = urlparse(self.path)
        path, query = url.path, parse_qs(url.query)
        self.state.requests.append((method, path))
        try:
            with self.state.lock:
                self._route(method, path, query)
        except HubError as e:
            headers = {"X-Error-Message": e.message}
            if e.code:
                headers["X-Error-Code"] = e.code
            self._send(e.status, json.dumps({"error": e.message, **e.extra}).encode(), headers, head=method == "HEAD")

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self._dispatch("HEAD")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    # -- routes ------------------------------------------------------------------------------------------------
    def _route(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        st = self.state
        user = st.user(self.headers)
        if path == "/api/whoami-v2" and method == "GET":
            if user is None:
                raise HubError(401, "Invalid user token")
            return self._json(
                200,
                {
                    "type": "user",
                    "name": user,
                    "orgs": [{"name": o} for o in st.orgs.get(user, [])],
                    "auth": {"type": "access_token", "accessToken": {"role": "write"}},
                },
            )
        if path == "/api/validate-yaml" and method == "POST":
            body = json.loads(self._body() or b"{}")
            errors = validate_card_yaml(body.get("content", ""))
            return self._json(400 if errors else 200, {"errors": errors, "warnings": []})
        if path == "/api/repos/create" and method == "POST":
            return self._create_repo(user, json.loads(self._body() or b"{}"))
        if path == "/api/repos/delete" and method == "DELETE":
            body = json.loads(self._body() or b"{}")
            rtype = body.get("type") or "model"
            rid = f"{body.get('organization') or user}/{body['name']}"
            st.repo(rtype, rid, user, write=True)
            del st.repos[(rtype, rid)]
            return self._json(200, {})
        m = re.match(r"^/api/(models|datasets|spaces)/([^/]+/[^/]+)(?:/(.*))?$", path)
        if m:
            return self._api_repo(method, REPO_TYPES[m.group(1)], m.group(2), m.group(3) or "", query, user)
        m = re.match(r"^/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if m and method in ("GET", "HEAD"):
            rtype = REPO_TYPES[m.group(1)] if m.group(1) else "model"
            return self._resolve(method, rtype, m.group(2), unquote(m.group(3)), unquote(m.group(4)), user)
        raise HubError(404, f"emulator: no route for {method} {path}")

    def _create_repo(self, user: str | None, body: dict[str, Any]) -> None:
        if user is None:
            raise HubError(401, "You must be authenticated to create a repo")
        ns = body.get("organization") or user
        if not self.state.can_write(user, ns):
            raise HubError(403, f"You don't have the rights to create a repo under {ns}")
        rtype = body.get("type") or "model"
        rid = f"{ns}/{body['name']}"
        prefix = "" if rtype == "model" else f"{rtype}s/"
        url = f"http://{self.headers.get('Host')}/{prefix}{rid}"
        if (rtype, rid) in self.state.repos:
            # The Hub's 409 carries the repo url: create_repo(exist_ok=True) reads it.
            raise HubError(409, "You already created this repo", extra={"url": url})
        private = body.get("visibility") == "private" or bool(body.get("private"))
        repo = Repo(rtype, rid, private, user)
        # The Hub creates every repo with an initial commit holding .gitattributes.
        files = {".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"}
        date = _now()
        oid = _commit_oid(None, files, "initial commit", date)
        repo.commits[oid] = Commit(oid, None, files, "initial commit", "", date, user)
        repo.branches["main"] = oid
        self.state.repos[(rtype, rid)] = repo
        return self._json(200, {"url": url, "name": rid, "id": rid})

    def _api_repo(
        self, method: str, rtype: str, rid: str, rest: str, query: dict[str, list[str]], user: str | None
    ) -> None:
        st = self.state
        if rest == "" and method == "GET":
            repo = st.repo(rtype, rid, user)
            return self._json(200, self._info(repo, repo.resolve("main")))
        m = re.match(r"^revision/(.+)$", rest)
        if m and method == "GET":
            repo = st.repo(rtype, rid, user)
            c = repo.resolve(m.group(1))
            if c is None:
                raise HubError(404, f"Invalid rev id: {m.group(1)}", "RevisionNotFound")
            return self._json(200, self._info(repo, c))
        if rest == "refs" and method == "GET":
            repo = st.repo(rtype, rid, user)
            return self._json(
                200,
                {
                    "branches": [
                        {"name": b, "ref": f"refs/heads/{b}", "targetCommit": o} for b, o in repo.branches.items()
                    ],
                    "tags": [{"name": t, "ref": f"refs/tags/{t}", "targetCommit": o} for t, o in repo.tags.items()],
                    "converts": [],
                    "pullRequests": [],
                },
            )
        m = re.match(r"^preupload/(.+)$", rest)
        if m and method == "POST":
            repo = st.repo(rtype, rid, user, write=True)
            head = repo.resolve(m.group(1))
            body = json.loads(self._body())
            files = []
            for f in body.get("files", []):
                existing = head.files.get(f["path"]) if head else None
                files.append(
                    {
                        "path": f["path"],
                        "uploadMode": "regular",
                        "shouldIgnore": False,
                        "oid": git_blob_oid(existing) if existing is not None else None,
                    }
                )
            return self._json(200, {"files": files, "commitOid": head.oid if head else None})
        m = re.match(r"^commit/(.+)$", rest)
        if m and method == "POST":
            return self._commit(st.repo(rtype, rid, user, write=True), unquote(m.group(1)), user)
        m = re.match(r"^tag/(.+)$", rest)
        if m and method == "POST":
            repo = st.repo(rtype, rid, user, write=True)
            c = repo.resolve(m.group(1))
            if c is None:
                raise HubError(404, f"Invalid rev id: {m.group(1)}", "RevisionNotFound")
            tag = json.loads(self._body())["tag"]
            if tag in repo.tags or tag in repo.branches:
                raise HubError(409, f"Tag {tag} already exists")
            repo.tags[tag] = c.oid
            return self._json(200, {})
        m = re.match(r"^tree/([^/]+)(?:/(.*))?$", rest)
        if m and method == "GET":
            repo = st.repo(rtype, rid, user)
            c = repo.resolve(m.group(1))
            if c is None:
                raise HubError(404, f"Invalid rev id: {m.group(1)}", "RevisionNotFound")
            return self._tree(repo, c, unquote(m.group(2) or "").strip("/"), query)
        m = re.match(r"^paths-info/(.+)$", rest)
        if m and method == "POST":
            repo = st.repo(rtype, rid, user)
            c = repo.resolve(m.group(1))
            if c is None:
                raise HubError(404, f"Invalid rev id: {m.group(1)}", "RevisionNotFound")
            raw = self._body().decode()
            ctype = self.headers.get("Content-Type", "")
            if "json" in ctype:
                paths = json.loads(raw).get("paths", [])
            else:
                paths = parse_qs(raw).get("paths", [])
            out = []
            for p in paths:
                p = p.strip("/")
                if p in c.files:
                    out.append(self._file_entry(c, p))
                elif any(f.startswith(p + "/") for f in c.files) or p == "":
                    out.append(self._dir_entry(p))
            return self._json(200, out)
        m = re.match(r"^commits/(.+)$", rest)
        if m and method == "GET":
            repo = st.repo(rtype, rid, user)
            c = repo.resolve(m.group(1))
            if c is None:
                raise HubError(404, f"Invalid rev id: {m.group(1)}", "RevisionNotFound")
            out = []
            while c is not None:
                out.append(
                    {
                        "id": c.oid,
                        "title": c.title,
                        "message": c.message,
                        "date": c.date,
                        "authors": [{"user": c.author}],
                    }
                )
                c = repo.commits.get(c.parent) if c.parent else None
            return self._json(200, out)
        raise HubError(404, f"emulator: no route for {method} /api/{rtype}s/{rid}/{rest}")

    def _info(self, repo: Repo, c: Commit) -> dict[str, Any]:
        card = c.files.get("README.md", b"").decode(errors="replace")
        m = re.match(r"^---\s*\n(.*?)\n---", card, re.S)
        card_data = yaml.safe_load(m.group(1)) if m else None
        return {
            "_id": repo.repo_id,
            "id": repo.repo_id,
            "author": repo.repo_id.split("/")[0],
            "sha": c.oid,
            "private": repo.private,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": (card_data or {}).get("tags", []) if isinstance(card_data, dict) else [],
            "cardData": card_data,
            "createdAt": repo.created_at,
            "lastModified": c.date,
            "siblings": [{"rfilename": p} for p in sorted(c.files)],
        }

    @staticmethod
    def _file_entry(c: Commit, p: str) -> dict[str, Any]:
        return {"type": "file", "oid": git_blob_oid(c.files[p]), "size": len(c.files[p]), "path": p}

    @staticmethod
    def _dir_entry(p: str) -> dict[str, Any]:
        return {"type": "directory", "oid": hashlib.sha1(p.encode()).hexdigest(), "size": 0, "path": p}

    def _tree(self, repo: Repo, c: Commit, base: str, query: dict[str, list[str]]) -> None:
        recursive = (query.get("recursive") or ["false"])[0].lower() in ("1", "true")
        prefix = base + "/" if base else ""
        if base and base in c.files:
            raise HubError(404, f"{base} is a file, not a directory", "EntryNotFound")
        entries: dict[str, dict[str, Any]] = {}
        for p in sorted(c.files):
            if not p.startswith(prefix):
                continue
            rel = p[len(prefix) :].split("/")
            # Directories along the way are listed too, as the Hub does.
            for depth in range(1, len(rel)):
                d = prefix + "/".join(rel[:depth])
                if depth == 1 or recursive:
                    entries.setdefault(d, self._dir_entry(d))
                if not recursive:
                    break
            if len(rel) == 1 or recursive:
                entries[p] = self._file_entry(c, p)
        if base and not entries:
            raise HubError(404, f"Entry not found: {base}", "EntryNotFound")
        items = [entries[k] for k in sorted(entries)]
        # Paginate like the Hub (a Link header with rel="next"), so clients that follow it are exercised.
        limit = int((query.get("limit") or ["1000"])[0])
        start = int((query.get("cursor") or ["0"])[0])
        page = items[start : start + limit]
        headers = {}
        if start + limit < len(items):
            q = "&".join(f"{k}={v[0]}" for k, v in query.items() if k != "cursor")
            nxt = f"http://{self.headers.get('Host')}{urlparse(self.path).path}?{q}&cursor={start + limit}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        return self._json(200, page, headers)

    def _commit(self, repo: Repo, rev: str, user: str) -> None:
        branch = rev[len("refs/heads/") :] if rev.startswith("refs/heads/") else rev
        if branch not in repo.branches:
            raise HubError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        head = repo.commits[repo.branches[branch]]
        header: dict[str, Any] | None = None
        files = dict(head.files)
        # Parse and check every line first: a bad operation fails the whole commit and changes nothing.
        for n, line in enumerate(self._body().splitlines()):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                key, value = item["key"], item["value"]
            except (ValueError, KeyError, TypeError):
                raise HubError(400, f"line {n}: not a commit operation") from None
            if key == "header":
                header = value
            elif key == "file":
                if value.get("encoding") != "base64":
                    raise HubError(400, f"line {n}: unsupported encoding {value.get('encoding')!r}")
                try:
                    files[value["path"]] = base64.b64decode(value["content"], validate=True)
                except (ValueError, KeyError):
                    raise HubError(400, f"line {n}: invalid base64 content") from None
            elif key == "deletedFile":
                if value["path"] not in files:
                    raise HubError(404, f"File not found: {value['path']}", "EntryNotFound")
                del files[value["path"]]
            elif key == "deletedFolder":
                pre = value["path"].rstrip("/") + "/"
                for p in [p for p in files if p.startswith(pre)]:
                    del files[p]
            else:
                # lfsFile needs the LFS batch API, which this emulator does not offer (preupload never asks for it).
                raise HubError(400, f"line {n}: unsupported operation {key!r}")
        if header is None or not header.get("summary"):
            raise HubError(400, "commit header with a summary is required")
        parent = header.get("parentCommit")
        if parent and parent != head.oid:
            raise HubError(412, f"parentCommit {parent} is not the head of {branch} ({head.oid})")
        date = _now()
        oid = _commit_oid(head.oid, files, header["summary"], date)
        repo.commits[oid] = Commit(oid, head.oid, files, header["summary"], header.get("description", ""), date, user)
        repo.branches[branch] = oid
        prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
        base = f"http://{self.headers.get('Host')}"
        return self._json(
            200,
            {
                "success": True,
                "commitOid": oid,
                "commitUrl": f"{base}/{prefix}{repo.repo_id}/commit/{oid}",
                "pullRequestUrl": None,
                "commitMessage": header["summary"],
            },
        )

    def _resolve(self, method: str, rtype: str, rid: str, rev: str, path: str, user: str | None) -> None:
        repo = self.state.repo(rtype, rid, user)
        c = repo.resolve(rev)
        if c is None:
            raise HubError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        if path not in c.files:
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound")
        data = c.files[path]
        etag = f'"{git_blob_oid(data)}"'
        headers = {"X-Repo-Commit": c.oid, "ETag": etag, "Accept-Ranges": "bytes"}
        rng = self.headers.get("Range")
        status = 200
        if rng:
            m = re.match(r"bytes=(\d*)-(\d*)$", rng.strip())
            if not m:
                raise HubError(416, f"bad Range {rng}")
            size = len(data)
            if m.group(1):
                start, end = int(m.group(1)), int(m.group(2)) if m.group(2) else size - 1
            else:  # suffix range: the last N bytes
                start, end = max(0, size - int(m.group(2))), size - 1
            end = min(end, size - 1)
            if start >= size and size:
                raise HubError(416, "range not satisfiable")
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
            data, status = data[start : end + 1], 206
        headers["Content-Length"] = str(len(data))
        self._send(status, data, headers, content_type="application/octet-stream", head=method == "HEAD")


class HubEmulator:
    """Start with `HubEmulator(tokens={"hf_xxx": "alice"}, orgs={"alice": ["org"]}).start()`; `.url` is HF_ENDPOINT."""

    def __init__(self, tokens: dict[str, str], orgs: dict[str, list[str]] | None = None, host: str = "127.0.0.1"):
        self.state = HubState(tokens, orgs)
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer((host, 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="hub-emulator", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "HubEmulator":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "HubEmulator":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
