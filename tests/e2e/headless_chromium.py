"""Opens a page in headless Chromium and talks to it over the DevTools protocol on a pipe (--remote-debugging-pipe:
commands on fd 3, replies and events on fd 4, each message JSON ended by a NUL byte), so no websocket library
or network port is needed. Records console errors, uncaught exceptions and every network request the page makes."""

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


def find_chromium():
    """Debian's `chromium` (scripts/setup.sh installs it), or another Chromium-based browser on PATH."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class HeadlessPage:
    """One tab. Use as a context manager; `open(url)` then `wait_for(expression)` and `evaluate(expression)`."""

    def __init__(self, browser, width=1280, height=900):
        self._profile = tempfile.TemporaryDirectory(prefix="precdetect-chromium-")
        command_read, self._commands = os.pipe()
        self._replies, reply_write = os.pipe()

        def wire_pipes():  # runs in the child: the protocol lives on fds 3 and 4
            # Copies first: a pipe may itself be fd 3 or 4, and dup2 onto a different fd clears close-on-exec.
            commands, replies = os.dup(command_read), os.dup(reply_write)
            os.dup2(commands, 3)
            os.dup2(replies, 4)

        flags = ["--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-extensions", "--disable-background-networking", "--disable-dev-shm-usage",
                 f"--user-data-dir={self._profile.name}", f"--window-size={width},{height}", "about:blank"]
        self._process = subprocess.Popen([browser, *flags], preexec_fn=wire_pipes, close_fds=False,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
        os.close(command_read)
        os.close(reply_write)
        self._buffer = b""
        self._next_id = 0
        self.console_errors = []  # console.error/warn/assert calls, uncaught exceptions, log entries of level error
        self.requests = []  # every URL the page asked for
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self._call("Browser.close", timeout=10)
        except (TimeoutError, OSError, RuntimeError):
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._commands)
        os.close(self._replies)
        self._profile.cleanup()

    def call(self, method, params=None, timeout=30):
        """A command to the tab; returns its result."""
        return self._call(method, params, timeout, self._session)

    def open(self, url, timeout=30):
        self.call("Page.navigate", {"url": url}, timeout)

    def evaluate(self, expression, timeout=30):
        """The value of a JavaScript expression in the page (JSON-serialisable values only)."""
        reply = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, timeout)
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_for(self, expression, timeout=60):
        """Polls until `expression` is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"page never satisfied {expression}; console errors: {self.console_errors}")

    def screenshot(self):
        """A PNG of the whole page, beyond the window's height."""
        size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": False})
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])

    def _call(self, method, params=None, timeout=30, session=None):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline, method)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self._record(reply)

    def _receive(self, deadline, method):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                raise TimeoutError(f"Chromium did not answer {method}")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium closed the pipe before answering {method}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _record(self, event):
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning", "assert"):
            self.console_errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            self.console_errors.append(params["exceptionDetails"].get("exception", {}).get("description", "exception"))
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            self.console_errors.append(params["entry"]["text"])
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
