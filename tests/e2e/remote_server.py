"""A local server for remote-input tests (tests/e2e/test_remote.py), run as its own process on 127.0.0.1:

- the Hub's documented endpoints over ROOT/hub/ORG/NAME/: model info at a revision (`/api/models/ORG/NAME[/revision/REV]`,
  `siblings` and `sha`; with `?blobs=true` each weight file's `lfs` SHA-256 and size), file resolve (`/ORG/NAME/resolve/REV/FILE`, HEAD and GET) that redirects weight files to a
  second port acting as the CDN with the LFS headers huggingface_hub reads (X-Repo-Commit, X-Linked-Etag,
  X-Linked-Size); the names ROOT/extra-siblings/ORG/NAME lists, one a line (or ROOT/extra-siblings/ORG/NAME.json, a
  JSON list), are listed too (what no Hub lists: a name with a `..` segment, an absolute or empty one); repositories under ORG `private` answer 401 without `Authorization: Bearer hf_test_token`; a file
  ROOT/lfs-sha256/ORG/NAME/FILE makes the Hub name the SHA-256 it holds for FILE, not the one of the bytes the CDN
  serves (an LFS object that does not match its pointer);
- the CDN port: blobs by SHA-256, Range honoured; a request carrying Authorization is counted (`auth_on_cdn`) and refused;
- plain files (`/files/PATH`, Range honoured) and the same with a fault (`/fault/KIND/PATH`, KIND in `serve`: the
  answer's validators, a file replaced by ROOT/files/PATH.v2 once its start was read, a drip, a status forever, a
  Retry-After as an HTTP-date);
- misbehaving Hub mirrors: ROOT/hub-info/ORG/NAME.json is merged into that repository's model info (a `sha` that is
  no commit id), or names a `status` it always answers; a repository with ROOT/hub-hop/ORG/NAME redirects its weights
  through `http://localhost:PORT/hop/...` (another host by its name) before the CDN;
- misbehaving S3 listings under the raw-keys bucket's prefixes `pages-*/` (one key a page; `pages-ok/` paginates
  rightly, `pages-repeat/` sends one continuation token again and again, `pages-cycle/` two in turn,
  `pages-empty/` says it is truncated and gives no token, `pages-endless/` a fresh token for ever) and `outside/`
  (its listing names a key outside the prefix asked);
- a path-style S3 bucket `raw-keys` (AWS_ENDPOINT_URL = this server): ranged GetObject of the keys ROOT/raw-keys.json
  maps to files, each key exactly as its path spells it (`run-42/../x.bin` is a key, not `x.bin`), and a minimal
  ListObjectsV2 (prefix, delimiter); a request signed with SigV4 is checked as S3 checks it (botocore's
  S3SigV4Auth over the path as sent, which S3 does not normalize, with the secret `secret`), a mismatch answered 403
  SignatureDoesNotMatch;
- `/__stats`: body bytes sent and answers given per served file (per path for other answers), every request's path
  as sent (`paths`), when it came (`times`, seconds since the epoch) and the Range it asked (`ranges`), the count of tokens that reached the CDN
  (`auth_on_cdn`) or any host but the Hub's own authority (`auth_off_host`), and of requests refused for an expired
  link; `/__reset` clears them, the expiry and the CDN's validators;
- `/__latency?ms=N`: from now on each request waits N ms before it is answered, as on a link with that round trip
  (a benchmark's; `/__reset` sets it back to 0);
- `/__expire?after=N[&change=1|commit|linked]`: from now on each CDN link (one per resolve answer) serves N requests,
  then answers 403 as a signed URL past its expiry does; with `change=1` a file's later links serve another version
  of it (another ETag), as if it had been replaced on the Hub meanwhile; with `commit` or `linked` a file's later
  resolve answers name another X-Repo-Commit or X-Linked-Etag;
- `/__cdn?validators=0`: from now on the CDN answers with no ETag (a CDN that keeps none: the Hub's commit and
  linked ETag are what pin a file).

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
from email.utils import formatdate
from urllib.parse import parse_qs, quote, unquote, urlsplit
from xml.sax.saxutils import escape

ROOT = Path(sys.argv[1])
TOKEN = "hf_test_token"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TEXT_SUFFIXES = (".json", ".md", ".txt", ".py", ".jinja", ".yaml")  # served by the Hub itself, not the CDN
STATS = {"bytes": {}, "answers": {}, "paths": [], "times": [], "ranges": [], "auth_on_cdn": 0, "auth_off_host": 0,
         "requests": 0, "expired": 0}
BUCKET = "raw-keys"
EXPIRY = {"after": 0, "change": ""}  # after 0: links never expire
CDN = {"validators": True}
RESOLVES = {}  # (org, name, file) -> resolve answers given
LATENCY = {"seconds": 0.0}
LINKS = {"issued": 0, "uses": {}, "first": {}}  # link id -> requests served; digest -> its first link
LOCK = threading.Lock()
SEEN = {}  # fault state per path: requests seen
CDN_PORT = [0]
MAIN_PORT = [0]
PAGED = ("pages-ok/", "pages-repeat/", "pages-cycle/", "pages-empty/", "pages-endless/")
# Validators per fault kind: the ETag's kind ("weak": W/"<version>"; "weak-same": W/"1" whatever the version), whether
# Last-Modified is sent, and whether the file is replaced by PATH.v2 for every request but those of its start.
VALIDATORS = {"lm": (None, True, False), "weak": ("weak", False, False), "none": (None, False, False),
              "swap-lm": (None, True, True), "swap-weak": ("weak", False, True),
              "swap-weak-lm": ("weak-same", True, True), "swap-none": (None, False, True)}


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
            # A token is for the Hub's own authority, 127.0.0.1:PORT: never for the CDN, nor the same server by
            # another name.
            if "Authorization" in self.headers and self.headers.get("Host") != f"127.0.0.1:{MAIN_PORT[0]}":
                STATS["auth_off_host"] += 1
        path = unquote(urlsplit(self.path).path)
        if not path.startswith("/__"):
            with LOCK:
                STATS["paths"].append(urlsplit(self.path).path)
                STATS["times"].append(time.time())
                STATS["ranges"].append(self.headers.get("Range", ""))
        if not path.startswith("/__"):
            time.sleep(LATENCY["seconds"])
        if self.server.server_port == CDN_PORT[0]:
            return self.cdn(path)
        if path == "/__stats":
            return self.reply(200, json.dumps(STATS).encode(), {"Content-Type": "application/json"})
        if path == "/__reset":
            with LOCK:
                STATS.update(bytes={}, answers={}, paths=[], times=[], ranges=[], auth_on_cdn=0, auth_off_host=0,
                             requests=0, expired=0)
                SEEN.clear()
                RESOLVES.clear()
                EXPIRY.update(after=0, change="")
                CDN.update(validators=True)
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
                EXPIRY.update(after=int(query["after"][0]), change=query.get("change", [""])[0])
            return self.reply(200, b"{}")
        if path == "/__cdn":
            with LOCK:
                CDN.update(validators=parse_qs(urlsplit(self.path).query).get("validators") != ["0"])
            return self.reply(200, b"{}")
        if path.startswith("/hop/"):  # a redirect's stop on the way: on to where `to` says
            return self.reply(302, b"", {"Location": parse_qs(urlsplit(self.path).query)["to"][0]})
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
        extra_json = ROOT / "extra-siblings" / org / f"{name}.json"  # names no line can hold: "", "a b"
        files += json.loads(extra_json.read_text()) if extra_json.is_file() else []
        info = {"_id": "0" * 24, "id": f"{org}/{name}", "modelId": f"{org}/{name}", "sha": COMMIT,
                "private": org == "private", "gated": False, "disabled": False, "downloads": 0, "likes": 0,
                "tags": [], "lastModified": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z",
                "siblings": [self.sibling(org, name, f, folder / f, blobs) for f in files]}
        override = ROOT / "hub-info" / org / f"{name}.json"
        changes = json.loads(override.read_text()) if override.is_file() else {}
        if "status" in changes:  # a mirror that fails, every time it is asked
            return self.reply(changes["status"], b'{"error": "Internal Error"}')
        info.update(changes)
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
            resolved = RESOLVES[(org, name, filename)] = RESOLVES.get((org, name, filename), 0) + 1
        if resolved > 1 and EXPIRY["change"] == "commit":  # the mirror now answers for another commit
            common["X-Repo-Commit"] = "f" * 40
        if resolved > 1 and EXPIRY["change"] == "linked":  # ... or names another LFS object
            named = "0" * 64
        location = f"http://127.0.0.1:{CDN_PORT[0]}/{digest}?link={link}"
        if (ROOT / "hub-hop" / org / name).is_file():  # the same server by another name, then the CDN
            location = f"http://localhost:{MAIN_PORT[0]}/hop/?to={quote(location, safe='')}"
        self.reply(302, b"", {**common, "Location": location, "X-Linked-Etag": f'"{named}"',
                               "X-Linked-Size": str(file.stat().st_size), "ETag": f'"{named}"'})

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
        etag = f'"{digest}"' if EXPIRY["change"] != "1" or link == first else '"another-version"'
        for file in (ROOT / "hub").rglob("*"):
            if file.is_file() and not file.name.endswith(TEXT_SUFFIXES) and sha256(file) == digest:
                return self.serve(file, f"cdn:{file.relative_to(ROOT / 'hub').as_posix()}",
                                  fault=None if CDN["validators"] else "none", etag=etag)
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
            prefix, token = query.get("prefix", [""])[0], query.get("continuation-token", [""])[0]
            if prefix.startswith(PAGED):
                return self.list_page(objects, prefix, token)
            return self.list_objects(objects, prefix, query.get("delimiter", [""])[0])
        if key not in objects:
            return self.reply(404, b"<Error><Code>NoSuchKey</Code></Error>")
        self.serve(ROOT / objects[key], f"s3:{key}")

    def list_objects(self, objects, prefix, delimiter):
        """ListObjectsV2's answer, in one page: the keys under `prefix`, those past a `delimiter` after it rolled
        up into common prefixes."""
        keys, folders = [], set()
        for key in sorted(objects):
            # `outside/`'s listing names a key outside it, as a store that ignores the prefix would.
            if not key.startswith(prefix) and not (prefix.startswith("outside/") and key == "secret.bin"):
                continue
            cut = key.find(delimiter, len(prefix)) if delimiter and key.startswith(prefix) else -1
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

    def list_page(self, objects, prefix, token):
        """One key a page under a `pages-*/` prefix, each continued as the prefix says: rightly (`pages-ok/`: its
        keys, then the end), or with a token sent again (`repeat`), two in turn (`cycle`), none though the answer
        says it is truncated (`empty`), or a fresh one for ever (`endless`)."""
        keys = sorted(k for k in objects if k.startswith(prefix))
        page = int(token[len("page-"):]) if token.startswith("page-") else 0
        mode = prefix.split("/", 1)[0][len("pages-"):]
        following = {"ok": f"page-{page + 1}" if page + 1 < len(keys) else "",
                     "repeat": "page-0", "cycle": f"page-{1 - page % 2}", "empty": "",
                     "endless": f"page-{page + 1}"}[mode]
        truncated = mode != "ok" or bool(following)
        key = keys[page % len(keys)]
        xml = (f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>{BUCKET}</Name><Prefix>{escape(prefix)}'
               f"</Prefix><KeyCount>1</KeyCount><IsTruncated>{str(truncated).lower()}</IsTruncated>"
               + (f"<NextContinuationToken>{following}</NextContinuationToken>" if truncated else "")
               + f"<Contents><Key>{escape(key)}</Key><Size>{(ROOT / objects[key]).stat().st_size}</Size></Contents>"
               "</ListBucketResult>")
        self.reply(200, xml.encode(), {"Content-Type": "application/xml"})

    # -- files, with faults --

    def serve(self, file, key, fault=None, etag=None, extra=None):
        """`file` by range. A fault changes the answer: its status (401, 403, 404; 429 and `503-date` once, 500
        always), its validators (VALIDATORS: Last-Modified only, a weak ETag, none; `etag`: another ETag each time;
        `swap-*`: PATH.v2 served to every range but one from byte 0), its bytes (`ignore-range`, `bad-range`,
        `short`, `long`, `gzip`), or how they come once the first read is done (`stall`: nothing for 30 s;
        `stall-after`: half the body, then nothing for a minute; `reset`; `drip-N-MS`: N bytes every MS ms)."""
        if not file.is_file():
            return self.reply(404, b"not found")
        with LOCK:
            seen = SEEN[key] = SEEN.get(key, 0) + 1
        status_fault = {"401": 401, "403": 403, "404": 404, "500": 500}.get(fault)
        if status_fault:
            return self.reply(status_fault, b"refused")
        if fault == "429" and seen == 1:
            return self.reply(429, b"slow down", {"Retry-After": "1"})
        if fault == "503-date" and seen == 1:  # Retry-After as an HTTP-date, 3 s ahead
            return self.reply(503, b"busy", {"Retry-After": formatdate(time.time() + 3, usegmt=True)})
        kind, last_modified, swapped = VALIDATORS.get(fault, ("strong", False, False))
        # Replaced once its start was read: a reader's first reads (its header) see the old file, its later ones
        # (the tensors) the new.
        version = 2 if swapped and not self.headers.get("Range", "").startswith("bytes=0-") else 1
        if version == 2:
            file = file.with_name(file.name + ".v2")
        status = file.stat()
        size = status.st_size
        headers = dict(extra or {})
        if kind == "strong":
            headers["ETag"] = f'"v{seen}"' if fault == "etag" else (etag or f'"{size:x}-{status.st_mtime_ns:x}"')
        elif kind and kind.startswith("weak"):
            headers["ETag"] = f'W/"{1 if kind == "weak-same" else version}"'
        if last_modified:
            headers["Last-Modified"] = formatdate(1767225600 + 3600 * version, usegmt=True)
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
        if fault == "minus-total":  # a total C's strtoull would read as 2^64 - 1
            headers["Content-Range"] = f"bytes {first}-{last}/-1"
        if fault == "short":
            body = body[:len(body) // 2]
        if fault == "long":
            body = body + b"\0" * 16
        if fault == "stall" and first > 0:
            time.sleep(30)
        if fault == "stall-after" and first > 0:  # the body's first half, then nothing for a minute
            return self.drip(206, body, headers, key, len(body) // 2 + 1, 60)
        if fault == "reset" and first > 0:
            return self.reset(206, body, headers, key)
        if fault and fault.startswith("drip-") and first > 0:
            _, chunk, every = fault.split("-")
            return self.drip(206, body, headers, key, int(chunk), int(every) / 1000)
        self.reply(206, body, headers, key)

    def drip(self, status, body, headers, key, chunk, every):
        """Sends the headers, then `chunk` bytes of the body every `every` seconds until it is sent or the client
        goes: a server too slow to be waited for, or one just fast enough."""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for at in range(0, len(body), chunk):
                self.wfile.write(body[at:at + chunk])
                self.wfile.flush()
                self.count(key, len(body[at:at + chunk]))
                time.sleep(every)
        except OSError:  # the client gave up on it
            self.close_connection = True

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
    CDN_PORT[0], MAIN_PORT[0] = cdn_server.server_port, main_server.server_port
    threading.Thread(target=cdn_server.serve_forever, daemon=True).start()
    print(json.dumps({"port": main_server.server_port, "cdn_port": cdn_server.server_port}), flush=True)
    main_server.serve_forever()


if __name__ == "__main__":
    main()
