#!/usr/bin/python3
"""A Hugging Face Hub-shaped HTTP server for trinity's hub tests (standard library only).

Serves repos from --root:  <root>/{models,datasets}/<Org>/<Name>/refs.json  ({"main": "<sha>", "v1": ...})
                           <root>/{models,datasets}/<Org>/<Name>/commits/<sha>/<files...>
                           <root>/.../<Name>/gated  (file: requests need "Authorization: Bearer <--token>")
Routes, as huggingface.co answers them:
  GET  /api/{models,datasets}/<repo>/revision/<rev>         {"id", "sha", "siblings": [{"rfilename"}]}
  GET  /api/{models,datasets}/<repo>/tree/<rev>?recursive=   paged (2 entries a page, Link: rel="next")
  HEAD/GET /[datasets/]<repo>/resolve/<rev>/<path>           X-Repo-Commit, ETag (git blob sha1), Content-Length;
       LFS files (.safetensors, .parquet): 302 to http://localhost:<port>/cdn/<sha256> with X-Linked-Etag / X-Linked-Size
  HEAD/GET /cdn/<sha256>                                     Range: bytes=N- answered with 206
  404s carry X-Error-Code RepoNotFound / RevisionNotFound / EntryNotFound; gated repos answer 401 GatedRepo.
--moved Old/Name=Org/Name answers every route of the old id with a relative 307 to the new one.
--drop-once SUBSTR: the first GET of a CDN blob whose repo path contains SUBSTR sends half the bytes and
closes the connection. --log FILE: one JSON line per request (method, path, range, auth).
Prints the port on stdout; exits when stdin closes.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--root", required=True)
ap.add_argument("--token", default="")
ap.add_argument("--moved", action="append", default=[])
ap.add_argument("--drop-once", default="")
ap.add_argument("--log", default="")
args = ap.parse_args()
moved = dict(m.split("=", 1) for m in args.moved)
dropped = set()
log_lock = threading.Lock()
blobs = {}  # sha256 -> file path (filled as LFS files are announced)


def is_lfs(path):
    return path.endswith(".safetensors") or path.endswith(".parquet")


def repo_dir(kind, repo):
    return os.path.join(args.root, kind, repo)


def commit_of(kind, repo, rev):
    refs = json.load(open(os.path.join(repo_dir(kind, repo), "refs.json")))
    if rev in refs:
        return refs[rev]
    if os.path.isdir(os.path.join(repo_dir(kind, repo), "commits", rev)):
        return rev
    return None


def files_of(kind, repo, sha):
    base = os.path.join(repo_dir(kind, repo), "commits", sha)
    out = []
    for d, _, fs in os.walk(base):
        for f in fs:
            out.append(os.path.relpath(os.path.join(d, f), base).replace(os.sep, "/"))
    return sorted(out)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *a):
        pass

    def record(self):
        if args.log:
            with log_lock, open(args.log, "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path, "range": self.headers.get("Range", ""),
                                    "auth": self.headers.get("Authorization", "")}) + "\n")

    def reply(self, status, headers=None, body=b""):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code, msg):
        self.reply(status, {"X-Error-Code": code, "X-Error-Message": msg, "Content-Type": "application/json"},
                   json.dumps({"error": msg}).encode())

    def do_HEAD(self):
        self.route()

    def do_GET(self):
        self.route()

    def check_repo(self, kind, repo):
        """None when the request may go on, else the reply was sent."""
        d = repo_dir(kind, repo)
        if not os.path.isfile(os.path.join(d, "refs.json")):
            self.error(404, "RepoNotFound", "Repository not found")
            return False
        if os.path.exists(os.path.join(d, "gated")) and self.headers.get("Authorization", "") != "Bearer " + args.token:
            self.error(401, "GatedRepo", "Access to this repo is restricted")
            return False
        return True

    def route(self):
        self.record()
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.split("/")[1:]
        for old, new in moved.items():
            o = old.split("/")
            for i in range(len(parts) - 1):
                if parts[i:i + 2] == o:
                    loc = "/" + "/".join(parts[:i] + new.split("/") + parts[i + 2:])
                    if url.query:
                        loc += "?" + url.query
                    return self.reply(307, {"Location": loc})
        if parts[0] == "cdn":
            return self.cdn(parts[1])
        if parts[0] == "api":
            kind, repo, op, rev = parts[1], "/".join(parts[2:4]), parts[4], urllib.parse.unquote(parts[5])
            if not self.check_repo(kind, repo):
                return
            sha = commit_of(kind, repo, rev)
            if sha is None:
                return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
            files = files_of(kind, repo, sha)
            if op == "revision":
                body = {"id": repo, "sha": sha, "siblings": [{"rfilename": f} for f in files]}
                return self.reply(200, {"Content-Type": "application/json"}, json.dumps(body).encode())
            q = urllib.parse.parse_qs(url.query)
            start = int(q.get("cursor", ["0"])[0])
            entries = []
            for f in files[start:start + 2]:
                p = os.path.join(repo_dir(kind, repo), "commits", sha, f)
                e = {"type": "file", "path": f, "size": os.path.getsize(p), "oid": "0" * 40}
                entries.append(e)
            headers = {"Content-Type": "application/json"}
            if start + 2 < len(files):
                q["cursor"] = [str(start + 2)]
                headers["Link"] = '<%s?%s>; rel="next"' % (url.path, urllib.parse.urlencode(q, doseq=True))
            return self.reply(200, headers, json.dumps(entries).encode())
        kind = "models"
        if parts[0] == "datasets":
            kind, parts = "datasets", parts[1:]
        if len(parts) < 5 or parts[2] != "resolve":
            return self.error(404, "EntryNotFound", "no such route")
        repo, rev, path = "/".join(parts[:2]), urllib.parse.unquote(parts[3]), urllib.parse.unquote("/".join(parts[4:]))
        if not self.check_repo(kind, repo):
            return
        sha = commit_of(kind, repo, rev)
        if sha is None:
            return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
        p = os.path.join(repo_dir(kind, repo), "commits", sha, path)
        if not os.path.isfile(p):
            return self.error(404, "EntryNotFound", path + " does not exist")
        data = open(p, "rb").read()
        if is_lfs(path):
            digest = hashlib.sha256(data).hexdigest()
            blobs[digest] = (p, repo + "/" + path)
            pointer = hashlib.sha1(b"pointer " + data[:16]).hexdigest()
            return self.reply(302, {"Location": "http://localhost:%d/cdn/%s" % (self.server.server_port, digest),
                                    "X-Repo-Commit": sha, "X-Linked-Etag": '"%s"' % digest,
                                    "X-Linked-Size": str(len(data)), "ETag": '"%s"' % pointer})
        git = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        self.reply(200, {"X-Repo-Commit": sha, "ETag": '"%s"' % git}, data)

    def cdn(self, digest):
        if digest not in blobs:
            return self.reply(404, {}, b"")
        p, name = blobs[digest]
        data = open(p, "rb").read()
        start = 0
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                return self.reply(416, {"Content-Range": "bytes */%d" % len(data)})
        body = data[start:]
        status = 206 if start else 200
        headers = {"Content-Length": str(len(body)), "ETag": '"%s"' % digest, "Accept-Ranges": "bytes"}
        if start:
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, len(data) - 1, len(data))
        if self.command == "GET" and args.drop_once and args.drop_once in name and name not in dropped:
            dropped.add(name)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.reply(status, headers, body)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_port, flush=True)
sys.stdin.read()  # the test process closed our stdin (or died)
server.shutdown()
