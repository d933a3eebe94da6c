#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One headless Chromium for all of report.sh's pages: each page's DOM and screenshots.

usage: report_chromium.py ERRFILE KIND WIDTH HEIGHT PAGE OUT [KIND WIDTH HEIGHT PAGE OUT ...]
                          -- CHROMIUM [FLAG ...]
KIND is dom (OUT gets the DOM after the load event, as chromium --dump-dom prints it) or
shot (OUT gets a PNG of the WIDTH x HEIGHT viewport, as chromium --screenshot
--window-size=WIDTH,HEIGHT takes it). Each page is loaded, in order, in one tab of one
browser, at WIDTH x HEIGHT CSS pixels, device scale factor 1.

Starting Chromium costs several seconds of CPU; a page load in a running one a fraction.
The browser is driven over the DevTools protocol on a pair of pipes (--remote-debugging-pipe:
fds 3 and 4, NUL-terminated JSON; no port), started in a session of its own and ended by its
PID (its process group: renderer, GPU and utility processes) on every path, failure too.
A job that fails leaves no OUT and a line in ERRFILE (Chromium's stderr goes there too);
the others go on. Exit 0 when every job wrote its OUT, 1 when one did not, 2 when Chromium
did not start or answer (3 on SIGTERM). Python's standard library only.
"""
import base64
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

PAGE_SECONDS = 120  # as report.sh's `timeout 120` for each Chromium it started


class Browser:
    """Chromium with its DevTools protocol on pipes; send() waits for the answer."""

    def __init__(self, argv, err):
        to_child, self.wfd = os.pipe()
        self.rfd, from_child = os.pipe()
        # the child's fd 3 reads our commands, its fd 4 writes the answers and events
        lo = [os.dup(to_child), os.dup(from_child)]
        while min(lo) <= 4:  # out of the way of 3 and 4 before the dup2s below
            lo = [fcntl_dupfd(f) for f in lo]

        def child_fds():
            os.dup2(lo[0], 3)
            os.dup2(lo[1], 4)
            os.close(lo[0])
            os.close(lo[1])
        self.proc = subprocess.Popen(argv + ["--remote-debugging-pipe"], stdin=subprocess.DEVNULL,
                                     stdout=err, stderr=err, pass_fds=(3, 4),
                                     preexec_fn=child_fds, start_new_session=True)
        for f in (to_child, from_child, *lo):
            os.close(f)
        self.buf, self.next_id, self.events = b"", 0, []

    def stop(self):
        """Browser.close, then the process group by the PID we started, whatever happened."""
        try:
            if self.proc.poll() is None:
                self.send("Browser.close", timeout=10)
                self.proc.wait(timeout=10)
        except Exception:
            pass
        if self.proc.poll() is None or pgid_alive(self.proc.pid):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        for f in (self.wfd, self.rfd):
            try:
                os.close(f)
            except OSError:
                pass

    def _read(self, deadline):
        """The next message, or TimeoutError / EOFError."""
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.rfd, 1 << 20)
            if not chunk:
                raise EOFError(f"Chromium closed its pipe (exit {self.proc.poll()})")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, timeout=PAGE_SECONDS):
        self.next_id += 1
        m = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        data = json.dumps(m).encode() + b"\0"
        while data:
            data = data[os.write(self.wfd, data):]
        deadline = time.monotonic() + timeout
        while True:
            r = self._read(deadline)
            if r.get("id") == self.next_id:
                if "error" in r:
                    raise RuntimeError(f"{method}: {r['error'].get('message')}")
                return r.get("result", {})
            if "method" in r:
                self.events.append(r)

    def wait_event(self, method, session, deadline):
        while True:
            for i, e in enumerate(self.events):
                if e["method"] == method and e.get("sessionId") == session:
                    del self.events[: i + 1]
                    return e
            self.events.append(self._read(deadline))


def fcntl_dupfd(fd):
    n = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return n


def pgid_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


# what --dump-dom prints: the doctype, then the document element's markup
DOM_JS = ("(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '')"
          " + document.documentElement.outerHTML")


def run_job(b, s, kind, w, h, page, out):
    b.send("Emulation.setDeviceMetricsOverride",
           {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": False}, s)
    b.events.clear()
    nav = b.send("Page.navigate", {"url": "file://" + os.path.abspath(page)}, s)
    if nav.get("errorText"):
        raise RuntimeError(f"{page}: {nav['errorText']}")
    b.wait_event("Page.loadEventFired", s, time.monotonic() + PAGE_SECONDS)
    if kind == "dom":
        r = b.send("Runtime.evaluate", {"expression": DOM_JS, "returnByValue": True}, s)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{page}: reading the DOM: {r['exceptionDetails'].get('text')}")
        data = (r["result"]["value"] + "\n").encode()
    else:
        r = b.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False}, s)
        data = base64.b64decode(r["data"])
    with open(out + ".part", "wb") as f:
        f.write(data)
    os.replace(out + ".part", out)


def main(argv):
    if "--" not in argv or len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cut = argv.index("--")
    errpath, spec, chromium = argv[0], argv[1:cut], argv[cut + 1:]
    if not chromium or len(spec) % 5:
        print(__doc__, file=sys.stderr)
        return 2
    jobs = [(spec[i], int(spec[i + 1]), int(spec[i + 2]), spec[i + 3], spec[i + 4])
            for i in range(0, len(spec), 5)]
    for j in jobs:
        if j[0] not in ("dom", "shot"):
            print(f"report_chromium.py: unknown kind {j[0]}", file=sys.stderr)
            return 2
        try:
            os.unlink(j[4])
        except FileNotFoundError:
            pass
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))  # `timeout` ends us: stop() still runs
    err = open(errpath, "ab", buffering=0)
    note = lambda s: err.write(("report_chromium.py: " + s + "\n").encode())
    failed = 0
    with tempfile.TemporaryDirectory(prefix="fctl-chromium.") as prof:
        try:
            b = Browser(chromium + [f"--user-data-dir={prof}", "about:blank"], err)
        except OSError as e:
            note(f"cannot start {chromium[0]}: {e}")
            return 2
        try:  # whatever happens below, SIGTERM (timeout) included, the browser is ended
            try:
                t = b.send("Target.createTarget", {"url": "about:blank"}, timeout=PAGE_SECONDS)
                s = b.send("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True})["sessionId"]
                b.send("Page.enable", {}, s)
            except Exception as e:
                note(f"Chromium did not start a page: {e}")
                return 2
            for kind, w, h, page, out in jobs:
                try:
                    run_job(b, s, kind, w, h, page, out)
                except (TimeoutError, EOFError) as e:  # the browser is gone or stuck: no more jobs
                    note(f"{kind} {page}: {e}")
                    failed = 1
                    break
                except Exception as e:
                    note(f"{kind} {page}: {e}")
                    failed = 1
        finally:
            b.stop()
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
