"""A local server for remote-input tests (tests/e2e/test_remote.py), run as its own process on 127.0.0.1:

- the Hub's documented endpoints over ROOT/hub/ORG/NAME/: model info at a revision (`/api/models/ORG/NAME[/revision/REV]`,
  `siblings` and `sha`; with `?blobs=true` each weight file's `lfs` SHA-256 and size), file resolve (`/ORG/NAME/resolve/REV/FILE`, HEAD and GET) that redirects weight files to a
  second port acting as the CDN with the LFS headers huggingface_hub reads (X-Repo-Commit, X-Linked-Etag,
  X-Linked-Size); the names ROOT/extra-siblings/ORG/NAME lists, one a line, are listed too (what no Hub lists: a
  name with a `..` segment); repositories under ORG `private` answer 401 without `Authorization: Bearer hf_test_token`; a file
  ROOT/lfs-sha256/ORG/NAME/FILE makes the Hub name the SHA-256 it holds for FILE, not the one of the bytes the CDN
  serves (an LFS object that does not match its pointer);
- the CDN port: blobs by SHA-256, Range honoured; a request carrying Authorization is counted (`auth_on_cdn`) and refused;
- plain files (`/files/PATH`, Range honoured) and the same with a fault (`/fault/KIND/PATH`, KIND below);
- a path-style S3 bucket `raw-keys` (AWS_ENDPOINT_URL = this server): ranged GetObject of the keys ROOT/raw-keys.json
  maps to files, each key exactly as its path spells it (`run-42/../x.bin` is a key, not `x.bin`), and a minimal
  ListObjectsV2 (prefix, delimiter); a request signed with SigV4 is checked as S3 checks it (botocore's
  S3SigV4Auth over the path as sent, which S3 does not normalize, with the secret `secret`), a mismatch answered 403
  SignatureDoesNotMatch;
- `/__stats`: body bytes sent and answers given per served file (per path for other answers), every request's path
  as sent (`paths`), the count of tokens that reached the CDN
  and of requests refused for an expired link; `/__reset` clears them and the expiry;
- `/__latency?ms=N`: from now on each request waits N ms before it is answered, as on a link with that round trip
  (a benchmark's; `/__reset` sets it back to 0);
- `/__expire?after=N[&change=1]`: from now on each CDN link (one per resolve answer) serves N requests, then answers
  403 as a signed URL past its expiry does; with `change=1` a file's later links serve another version of it (another
  ETag), as if it had been replaced on the Hub meanwhile.

Prints `{"port": P, "cdn_port": C}` on its first line of stdout, then serves until killed.
"""

import functools
import hashlib
import json
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

ROOT = Path(sys.argv[1])
TOKEN = "hf_test_token"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TEXT_SUFFIXES = (".json", ".md", ".txt", ".py", ".jinja", ".yaml")  # served by the Hub itself, not the CDN
STATS = {"bytes": {}, "answers": {}, "paths": [], "auth_on_cdn": 0, "requests": 0, "expired": 0}
BUCKET = "raw-keys"
EXPIRY = {"after": 0, "change": False}  # after 0: links never expire
LATENCY = {"seconds": 0.0}
LINKS = {"issued": 0, "uses": {}, "first": {}}  # link id -> requests served; digest -> its first link
LOCK = threading.Lock()
SEEN = {}  # fault state per path: requests seen
CDN_PORT = [0]


@functools.lru_cache(maxsize=None)
def digest_of(path, size, mtime_ns):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sha256(path):
    status = path.stat()
    return digest_of(path, status.st_size, status.st_mtime_ns)


def lfs_sha256(org, name, filename, file):
    """The SHA-256 the Hub names a weight file by (its LFS pointer's): the file's own, unless
    ROOT/lfs-sha256/ORG/NAME/FILE holds another."""
    named = ROOT / "lfs-sha256" / org / name / filename
    return named.read_text().strip() if named.is_file() else sha256(file)


def read_range(path, first, last):
    with open(path, "rb") as f:
        f.seek(first)
        return f.read(last + 1 - first)


def parse_range(header, size):
    """(first, last) of a single `bytes=F-L` range (L clamped to the end), or None."""
    if not header or not header.startswith("bytes="):
        return None
    first, _, last = header[len("bytes="):].partition("-")
    if not first.isdigit():
        return None
    return int(first), min(int(last) if last.isdigit() else size - 1, size - 1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm the body would wait for the client's delayed
    # ACK (40 ms) on every kept-alive connection.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.route()

    def do_GET(self):
        self.route()

    def route(self):
        with LOCK:
            STATS["requests"] += 1
        path = unquote(urlsplit(self.path).path)
        if not path.startswith("/__"):
            with LOCK:
                STATS["paths"].append(urlsplit(self.path).path)
        if not path.startswith("/__"):
            time.sleep(LATENCY["seconds"])
        if self.server.server_port == CDN_PORT[0]:
            return self.cdn(path)
        if path == "/__stats":
            return self.reply(200, json.dumps(STATS).encode(), {"Content-Type": "application/json"})
        if path == "/__reset":
            with LOCK:
                STATS.update(bytes={}, answers={}, paths=[], auth_on_cdn=0, requests=0, expired=0)
                SEEN.clear()
                EXPIRY.update(after=0, change=False)
                LINKS.update(uses={}, first={})
                LATENCY.update(seconds=0.0)
            return self.reply(200, b"{}")
        if path == "/__latency":
            with LOCK:
                LATENCY.update(seconds=int(parse_qs(urlsplit(self.path).query)["ms"][0]) / 1000)
            return self.reply(200, b"{}")
        if path == "/__expire":
            query = parse_qs(urlsplit(self.path).query)
            with LOCK:
                EXPIRY.update(after=int(query["after"][0]), change=query.get("change") == ["1"])
            return self.reply(200, b"{}")
        if path.startswith("/api/models/"):
            return self.model_info(path[len("/api/models/"):], "blobs=true" in urlsplit(self.path).query)
        if path.startswith("/files/"):
            return self.serve(ROOT / "files" / path[len("/files/"):], path)
        if path == f"/{BUCKET}" or path.startswith(f"/{BUCKET}/"):
            return self.s3(path[len(BUCKET) + 2:])
        if path.startswith("/fault/"):
            kind, _, rest = path[len("/fault/"):].partition("/")
            return self.serve(ROOT / "files" / rest, path, fault=kind)
        parts = path.strip("/").split("/", 4)
        if len(parts) == 5 and parts[2] == "resolve":
            return self.resolve(parts[0], parts[1], parts[3], parts[4])
        self.reply(404, b"not found")

    # -- the Hub --

    def authorized(self, org):
        return org != "private" or self.headers.get("Authorization") == f"Bearer {TOKEN}"

    def repo(self, org, name):
        folder = ROOT / "hub" / org / name
        return folder if folder.is_dir() else None

    def model_info(self, rest, blobs):
        parts = rest.split("/")
        org, name = parts[0], parts[1] if len(parts) > 1 else ""
        revision = unquote(parts[3]) if len(parts) >= 4 and parts[2] == "revision" else "main"
        if not self.authorized(org):
            return self.reply(401, b'{"error": "Invalid credentials"}', {"X-Error-Code": "GatedRepo"})
        folder = self.repo(org, name)
        if folder is None:
            return self.reply(404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"})
        if revision not in ("main", COMMIT):
            return self.reply(404, b'{"error": "Invalid rev id"}', {"X-Error-Code": "RevisionNotFound"})
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        extra = ROOT / "extra-siblings" / org / name
        files += extra.read_text().split() if extra.is_file() else []
        info = {"_id": "0" * 24, "id": f"{org}/{name}", "modelId": f"{org}/{name}", "sha": COMMIT,
                "private": org == "private", "gated": False, "disabled": False, "downloads": 0, "likes": 0,
                "tags": [], "lastModified": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z",
                "siblings": [self.sibling(org, name, f, folder / f, blobs) for f in files]}
        self.reply(200, json.dumps(info).encode(), {"Content-Type": "application/json"})

    @staticmethod
    def sibling(org, name, filename, file, blobs):
        entry = {"rfilename": filename}
        if blobs:
            entry["size"] = file.stat().st_size
            if not filename.endswith(TEXT_SUFFIXES):  # stored in LFS, as the Hub's .gitattributes puts weights
                entry["lfs"] = {"sha256": lfs_sha256(org, name, filename, file), "size": file.stat().st_size,
                                "pointerSize": 134}
        return entry

    def resolve(self, org, name, revision, filename):
        if not self.authorized(org):
            return self.reply(401, b"unauthorized", {"X-Error-Code": "GatedRepo"})
        folder = self.repo(org, name)
        file = folder / filename if folder else None
        common = {"X-Repo-Commit": COMMIT}
        if file is None or revision not in ("main", COMMIT) or not file.is_file():
            return self.reply(404, b"entry not found", {**common, "X-Error-Code": "EntryNotFound"})
        if filename.endswith(TEXT_SUFFIXES):
            return self.serve(file, f"/{org}/{name}/{filename}", etag=f'"{sha256(file)[:40]}"', extra=common)
        digest, named = sha256(file), lfs_sha256(org, name, filename, file)
        with LOCK:
            LINKS["issued"] += 1
            link = LINKS["issued"]
        self.reply(302, b"", {**common, "Location": f"http://127.0.0.1:{CDN_PORT[0]}/{digest}?link={link}",
                               "X-Linked-Etag": f'"{named}"', "X-Linked-Size": str(file.stat().st_size),
                               "ETag": f'"{named}"'})

    def cdn(self, path):
        if "Authorization" in self.headers:  # a token must never leave the Hub's host
            with LOCK:
                STATS["auth_on_cdn"] += 1
            return self.reply(400, b"credentials sent to the CDN")
        digest = path.strip("/")
        link = parse_qs(urlsplit(self.path).query).get("link", ["0"])[0]
        with LOCK:
            uses = LINKS["uses"][link] = LINKS["uses"].get(link, 0) + 1
            first = LINKS["first"].setdefault(digest, link)
            expired = EXPIRY["after"] and uses > EXPIRY["after"]
            STATS["expired"] += bool(expired)
        if expired:
            return self.reply(403, b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>")
        etag = f'"{digest}"' if not EXPIRY["change"] or link == first else '"another-version"'
        for file in (ROOT / "hub").rglob("*"):
            if file.is_file() and not file.name.endswith(TEXT_SUFFIXES) and sha256(file) == digest:
                return self.serve(file, f"cdn:{file.relative_to(ROOT / 'hub').as_posix()}", etag=etag)
        self.reply(404, b"no such blob")

    # -- S3 keys as they are spelled --

    def signed_rightly(self):
        """Whether the request's SigV4 signature (if any) is the one botocore computes for it: what S3 would accept."""
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        authorization = self.headers.get("Authorization")
        if authorization is None:
            return True
        fields = dict(part.strip().split("=", 1) for part in authorization.split(" ", 1)[1].split(","))
        scope = fields["Credential"].split("/")  # KEY/DATE/REGION/s3/aws4_request
        signed = fields["SignedHeaders"].split(";")
        request = AWSRequest(method=self.command, url=f"http://{self.headers['Host']}{self.path}",
                             headers={name: self.headers[name] for name in signed if name != "host"})
        request.context["timestamp"] = self.headers["x-amz-date"]
        signer = S3SigV4Auth(Credentials(scope[0], "secret"), "s3", scope[2])
        expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        return expected == fields["Signature"]

    def s3(self, key):
        if not self.signed_rightly():
            return self.reply(403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>")
        objects = json.loads((ROOT / "raw-keys.json").read_text())
        query = parse_qs(urlsplit(self.path).query)
        if not key and query.get("list-type") == ["2"]:
            return self.list_objects(objects, query.get("prefix", [""])[0], query.get("delimiter", [""])[0])
        if key not in objects:
            return self.reply(404, b"<Error><Code>NoSuchKey</Code></Error>")
        self.serve(ROOT / objects[key], f"s3:{key}")

    def list_objects(self, objects, prefix, delimiter):
        """ListObjectsV2's answer, in one page: the keys under `prefix`, those past a `delimiter` after it rolled
        up into common prefixes."""
        keys, folders = [], set()
        for key in sorted(objects):
            if not key.startswith(prefix):
                continue
            cut = key.find(delimiter, len(prefix)) if delimiter else -1
            if cut < 0:
                keys.append(key)
            else:
                folders.add(key[:cut + 1])
        body = "".join(f"<Contents><Key>{escape(k)}</Key><Size>{(ROOT / objects[k]).stat().st_size}</Size></Contents>"
                       for k in keys)
        body += "".join(f"<CommonPrefixes><Prefix>{escape(f)}</Prefix></CommonPrefixes>" for f in sorted(folders))
        xml = (f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>{BUCKET}</Name><Prefix>{escape(prefix)}'
               f"</Prefix><KeyCount>{len(keys) + len(folders)}</KeyCount><IsTruncated>false</IsTruncated>{body}"
               "</ListBucketResult>")
        self.reply(200, xml.encode(), {"Content-Type": "application/xml"})

    # -- files, with faults --

    def serve(self, file, key, fault=None, etag=None, extra=None):
        if not file.is_file():
            return self.reply(404, b"not found")
        with LOCK:
            seen = SEEN[key] = SEEN.get(key, 0) + 1
        status_fault = {"401": 401, "403": 403, "404": 404}.get(fault)
        if status_fault:
            return self.reply(status_fault, b"refused")
        if fault == "429" and seen == 1:
            return self.reply(429, b"slow down", {"Retry-After": "1"})
        status = file.stat()
        size = status.st_size
        headers = dict(extra or {})
        headers["ETag"] = f'"v{seen}"' if fault == "etag" else (etag or f'"{status.st_size:x}-{status.st_mtime_ns:x}"')
        headers["Accept-Ranges"] = "bytes"
        asked = parse_range(self.headers.get("Range"), size)
        if fault == "gzip":
            headers["Content-Encoding"] = "gzip"
        if asked is None or fault == "ignore-range":
            return self.reply(200, file.read_bytes(), headers, key)
        first, last = asked
        headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        body = read_range(file, first, last)  # only the range: a benchmark's shards are large
        if fault == "bad-range":
            headers["Content-Range"] = f"bytes {first}-{last + 1}/{size}"
        if fault == "short":
            body = body[:len(body) // 2]
        if fault == "long":
            body = body + b"\0" * 16
        if fault == "stall" and first > 0:
            time.sleep(30)
        if fault == "reset" and first > 0:
            return self.reset(206, body, headers, key)
        self.reply(206, body, headers, key)

    def reset(self, status, body, headers, key):
        """Sends the headers and half the body, then resets the connection."""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:len(body) // 2])
        self.wfile.flush()
        self.count(key, len(body) // 2)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def count(self, key, length):
        with LOCK:
            STATS["bytes"][key] = STATS["bytes"].get(key, 0) + length
            STATS["answers"][key] = STATS["answers"].get(key, 0) + 1

    def reply(self, status, body, headers=None, key=None):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":  # a HEAD answer has the GET's headers, never its body
            self.wfile.write(body)
            if not self.path.startswith("/__"):  # every body a client receives, error answers too
                self.count(key or urlsplit(self.path).path, len(body))


def main():
    # socketserver's backlog of 5 overflows when a scan opens 8 range connections at once: the kernel drops the
    # SYNs past it, retried a second later, which timed a whole second into some benchmark rounds.
    ThreadingHTTPServer.request_queue_size = 128
    main_server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    cdn_server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    main_server.daemon_threads = cdn_server.daemon_threads = True
    CDN_PORT[0] = cdn_server.server_port
    threading.Thread(target=cdn_server.serve_forever, daemon=True).start()
    print(json.dumps({"port": main_server.server_port, "cdn_port": cdn_server.server_port}), flush=True)
    main_server.serve_forever()


if __name__ == "__main__":
    main()
