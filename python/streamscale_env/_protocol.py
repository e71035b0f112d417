"""Wire protocol of ``serve env`` (Go package serve/envserver).

A binary body is a sequence of sections: kind (1 byte) | n (uint32 LE) |
n elements LE, kind ``f`` float32, ``d`` float64, ``i`` int64, ``b`` bool
byte, ``j`` JSON (n bytes). JSON carries metadata only.

The bodies travel either as HTTP/1.1 requests (POST /v1/envs, …) or, the
fast path, as frames over a connection upgraded with GET /v1/stream
(Upgrade: streamscale-env.v1): request op (1 byte: C create, R reset,
S step, D close) | id (uint64 LE) | n (uint32 LE) | n payload bytes, and
response status (uint16 LE, the HTTP status) | n (uint32 LE) | n bytes:
the same bodies, no HTTP headers, one send and usually one receive per
step. See docs/python-env.md.
"""

import collections
import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading

import numpy as np

_DTYPES = {b"f": np.dtype("<f4"), b"d": np.dtype("<f8"), b"i": np.dtype("<i8"), b"b": np.dtype("u1"), b"j": np.dtype("u1")}
_HEADER = struct.Struct("<cI")
_FRAME = struct.Struct("<cQI")  # request frame header: op, id, payload bytes
_REPLY = struct.Struct("<HI")  # response frame header: status, payload bytes
STREAM_PROTOCOL = "streamscale-env.v1"
OP_CREATE, OP_RESET, OP_STEP, OP_CLOSE = b"C", b"R", b"S", b"D"
_TRANSPORTS = ("stream", "http")
# Kernel receive/send timeouts (SO_RCVTIMEO, SO_SNDTIMEO) on an upgraded
# connection, so that no poll() precedes each send and receive: Linux,
# where struct timeval is two native longs.
_KERNEL_TIMEOUTS = sys.platform.startswith("linux")
_WAITALL = getattr(socket, "MSG_WAITALL", 0)


class ServerError(RuntimeError):
    """An error response of the server: ``code`` is its machine-readable
    kind (bad_action, unknown_env, closed, too_many_envs, episode_over,
    not_reset, malformed_body, body_too_large, bad_request)."""

    def __init__(self, status, code, message):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


def decode(body):
    """Splits a binary body into a list of (kind, numpy array or parsed JSON)."""
    out, off, mv = [], 0, memoryview(body)
    while off < len(body):
        if len(body) - off < _HEADER.size:
            raise ValueError("streamscale_env: truncated section header")
        kind, n = _HEADER.unpack_from(body, off)
        off += _HEADER.size
        dt = _DTYPES.get(kind)
        if dt is None:
            raise ValueError(f"streamscale_env: unknown section kind {kind!r}")
        size = n * dt.itemsize
        if size > len(body) - off:
            raise ValueError("streamscale_env: section overruns the body")
        if kind == b"j":
            out.append((kind, json.loads(bytes(mv[off:off + size]))))
        else:
            out.append((kind, np.frombuffer(body, dtype=dt, count=n, offset=off)))
        off += size
    return out


def encode_actions(actions):
    """The step body: one int64 section."""
    a = np.ascontiguousarray(actions, dtype="<i8").ravel()
    return _HEADER.pack(b"i", a.size) + a.tobytes()


class StepFrame:
    """A reusable step request frame of instance ``id`` for ``n`` action
    entries: header, section header and int64 payload in one bytearray,
    refilled in place per step (no per-step encoding). ``frame`` is the
    whole frame, ``body`` its payload (for the HTTP route)."""

    def __init__(self, id, n):
        self.n = n
        self.frame = bytearray(_FRAME.size + _HEADER.size + 8 * n)
        _FRAME.pack_into(self.frame, 0, OP_STEP, id, _HEADER.size + 8 * n)
        _HEADER.pack_into(self.frame, _FRAME.size, b"i", n)
        self.body = memoryview(self.frame)[_FRAME.size:]
        self._actions = np.frombuffer(self.frame, dtype="<i8", count=n, offset=_FRAME.size + _HEADER.size)

    def fill(self, actions):
        """Writes actions (any shape of n entries; cast to int64 as
        encode_actions does) into the frame."""
        np.copyto(self._actions, np.asarray(actions).reshape(self.n), casting="unsafe")


class _Stale(Exception):
    """The server closed a kept-alive connection before answering."""


class Connection:
    """One keep-alive HTTP/1.1 connection to a server at ``addr``
    ("host:port" or "http://host:port").

    With ``stream=True`` the connection is upgraded to the frame protocol
    when it opens (GET /v1/stream), and call() sends frames; a server
    without it (404, 426) leaves the connection HTTP and call() maps each
    operation to its HTTP route. request() and json() speak HTTP only.

    A minimal HTTP/1.1 client on a raw socket (standard library): each
    request goes out in one send (headers and body together), the response
    is read with recv_into into one buffer of its own, whose views the
    decoded arrays are. It reads Content-Length, chunked and
    close-delimited bodies and honours "Connection: close". Profiling the
    step loop showed http.client spending more per request than the
    server's simulation of 16 envs (two sends per request, header parsing
    through the email package)."""

    _MAX_HEAD = 64 << 10
    _MAX_FRAME = 1 << 30

    def __init__(self, addr, timeout=120.0, stream=False):
        addr = addr.removeprefix("http://").rstrip("/")
        self.addr, self._timeout = addr, timeout
        self._unix = addr.removeprefix("unix:") if addr.startswith("unix:") else None
        if self._unix is not None:
            self._host_header = "localhost"
        else:
            host, _, port = addr.rpartition(":")
            self._host, self._port, self._host_header = host, int(port), addr
        self._sock = None
        self._rest = b""  # bytes read past the last response (none in practice)
        # bound: environments were created over this connection. serve env
        # ties them to it (freed when it closes, unknown to any other), so
        # a bound connection is never silently replaced by a new one.
        self.bound = False
        self._opened = False
        self._want_stream = stream
        self.stream = False  # the open connection speaks frames
        self._guess = 1 << 12  # receive buffer of the next frame: the last one's size

    def _dial(self):
        if self.bound and self._opened:
            raise ConnectionError(f"streamscale_env: the connection to serve env at {self.addr} was closed, and the "
                                  "environments created over it were freed with it; create new environments")
        if self._unix is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.settimeout(self._timeout)
                sock.connect(self._unix)
            except BaseException:
                sock.close()
                raise
            self._sock = sock
        else:
            self._sock = socket.create_connection((self._host, self._port), timeout=self._timeout)
            # One small request per step: do not let Nagle's algorithm
            # hold a segment back waiting for a delayed ACK.
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._opened = True
        self._rest = b""
        self.stream = False
        if self._want_stream:
            self._upgrade()

    def _upgrade(self):
        try:
            self._sock.sendall(f"GET /v1/stream HTTP/1.1\r\nHost: {self._host_header}\r\nConnection: Upgrade\r\n"
                               f"Upgrade: {STREAM_PROTOCOL}\r\n\r\n".encode("ascii"))
            status, _, headers = self._response(upgrade=True)
        except _Stale:
            self.close()
            raise ConnectionError(f"streamscale_env: {self.addr} closed the connection without answering the upgrade") from None
        except BaseException:
            self.close()
            raise
        if status == 101:
            if headers.get("upgrade", "").lower() != STREAM_PROTOCOL or self._rest:
                self.close()
                raise ConnectionError(f"streamscale_env: {self.addr} upgraded to {headers.get('upgrade', '')[:60]!r}, "
                                      f"not {STREAM_PROTOCOL}")
            self.stream = True
            if _KERNEL_TIMEOUTS and self._timeout:  # None or 0 (non-blocking): keep Python's
                self._blocking_with_kernel_timeouts()
        elif self._sock is None:
            raise ConnectionError(f"streamscale_env: {self.addr} refused the upgrade ({status}) and closed the connection")
        else:
            self._want_stream = False  # a serve env without frames: HTTP on this connection

    def _blocking_with_kernel_timeouts(self):
        """Makes the socket blocking, its timeout the kernel's: Python's
        own timeout polls the socket before every send and receive (two
        more system calls per step). A receive or send that times out
        then fails with EAGAIN, which call() reports as TimeoutError."""
        sec = int(self._timeout)
        tv = struct.pack("@ll", sec, int((self._timeout - sec) * 1e6))
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
        except OSError:
            return  # keep Python's timeout
        self._sock.settimeout(None)

    def call(self, op, id=0, body=b"", frame=None):
        """One operation (OP_CREATE with a JSON body, OP_RESET with JSON,
        OP_STEP with the binary action, OP_CLOSE): the response body, or
        ServerError. Over frames when the connection is upgraded. frame,
        if given, is the whole request frame (header and body, as
        frame_of builds it; body is then its payload, for HTTP)."""
        if self._sock is None and self._want_stream:
            self._dial()
        if not self.stream:
            return self._call_http(op, id, body)
        msg = frame if frame is not None else _FRAME.pack(op, id, len(body)) + body
        for attempt in (0, 1):
            if self._sock is None:
                self._dial()
                if not self.stream:
                    return self._call_http(op, id, body)
            try:
                self._sock.sendall(msg)
                status, data = self._frame()
                break
            except (_Stale, BrokenPipeError, ConnectionResetError):
                # Closed while idle (the server's idle timeout): reconnect
                # once, unless bound (then _dial raises).
                self.close()
                if attempt:
                    raise ConnectionError(f"streamscale_env: {self.addr} closed the connection without answering") from None
            except BlockingIOError:  # a kernel timeout (SO_RCVTIMEO, SO_SNDTIMEO) expired
                self.close()
                raise TimeoutError(f"streamscale_env: {self.addr} did not answer within {self._timeout} s") from None
            except BaseException:
                self.close()
                raise
        if status != 200:
            _raise_error(status, data)
        return data

    def _call_http(self, op, id, body):
        if op == OP_CREATE:
            return self.request("POST", "/v1/envs", body)
        if op == OP_RESET:
            return self.request("POST", f"/v1/envs/{id}/reset", body)
        if op == OP_STEP:
            return self.request("POST", f"/v1/envs/{id}/step", body, "application/octet-stream")
        if op == OP_CLOSE:
            return self.request("DELETE", f"/v1/envs/{id}")
        raise ValueError(f"streamscale_env: unknown operation {op!r}")

    def _frame(self):
        """Reads one response frame: (status, body as a memoryview of a
        buffer of its own). Usually one recv_into: the buffer is sized
        as the last response was; once the header is in, the rest is
        asked for whole (MSG_WAITALL)."""
        buf = bytearray(self._guess)
        view = memoryview(buf)
        have, need = 0, _REPLY.size
        while have < need:
            if need > _REPLY.size:
                k = self._sock.recv_into(view[have:need], need - have, _WAITALL)
            else:
                k = self._sock.recv_into(view[have:])
            if not k:
                if have == 0:
                    raise _Stale()
                raise ConnectionError(f"streamscale_env: {self.addr} closed the connection in the middle of a response")
            have += k
            if need == _REPLY.size and have >= need:
                status, n = _REPLY.unpack_from(buf)
                if n > self._MAX_FRAME:
                    raise ConnectionError(f"streamscale_env: response frame of {n} bytes, over {self._MAX_FRAME}")
                need += n
                if need > len(buf):
                    grown = bytearray(need)
                    grown[:have] = view[:have]
                    buf, view = grown, memoryview(grown)
        if have > need:
            raise ConnectionError(f"streamscale_env: {self.addr} sent {have - need} bytes past the response frame")
        self._guess = max(need, 64)
        return status, view[_REPLY.size:need]

    def request(self, method, path, body=None, ctype="application/json"):
        head = f"{method} {path} HTTP/1.1\r\nHost: {self._host_header}\r\n"
        if body is not None:
            head += f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
        msg = (head + "\r\n").encode("ascii")
        if body is not None:
            msg += body
        for attempt in (0, 1):
            if self._sock is None:
                self._dial()
            if self.stream:
                raise RuntimeError("streamscale_env: request() on a connection upgraded to frames; use call()")
            try:
                self._sock.sendall(msg)
                status, data, _ = self._response()
                break
            except (_Stale, BrokenPipeError, ConnectionResetError):
                # The server closed an idle keep-alive connection before
                # reading the request: reconnect once (unless bound: then
                # the next round raises).
                self.close()
                if attempt:
                    raise ConnectionError(f"streamscale_env: {self.addr} closed the connection without answering") from None
            except BaseException:
                self.close()  # the connection's state is unknown
                raise
        if status != 200:
            _raise_error(status, data)
        return data

    def _recv(self):
        b = self._sock.recv(1 << 16)
        if not b:
            raise ConnectionError(f"streamscale_env: {self.addr} closed the connection in the middle of a response")
        return b

    def _response(self, upgrade=False):
        """Reads one response: (status, body as a bytearray, headers). With
        upgrade, a 101 response ends at its header."""
        buf = self._rest
        while True:
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(buf) > self._MAX_HEAD:
                raise ConnectionError("streamscale_env: response header over 64 KiB")
            b = self._sock.recv(1 << 16)
            if not b:
                if buf:
                    raise ConnectionError(f"streamscale_env: {self.addr} closed the connection in the middle of a response")
                raise _Stale()
            buf += b
        lines = buf[:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not (parts[1].isascii() and parts[1].isdigit()):
            raise ConnectionError(f"streamscale_env: bad status line {lines[0][:100]!r}")
        status, headers = int(parts[1]), {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        rest = buf[end + 4:]
        if upgrade and status == 101:
            self._rest = rest
            return status, bytearray(), headers
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body, rest = self._chunked(rest)
        elif "content-length" in headers:
            n = headers["content-length"]
            if not (n.isascii() and n.isdigit()):
                raise ConnectionError(f"streamscale_env: bad Content-Length {n[:40]!r}")
            n = int(n)
            body = bytearray(n)
            have = min(n, len(rest))
            body[:have] = rest[:have]
            rest = rest[have:]
            view = memoryview(body)
            while have < n:
                k = self._sock.recv_into(view[have:])
                if not k:
                    raise ConnectionError(f"streamscale_env: {self.addr} closed the connection in the middle of a response")
                have += k
        else:  # delimited by the end of the connection
            body = bytearray(rest)
            rest = b""
            while b := self._sock.recv(1 << 16):
                body += b
            headers["connection"] = "close"
        self._rest = rest
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, body, headers

    def _chunked(self, buf):
        body = bytearray()
        while True:
            while (i := buf.find(b"\r\n")) < 0:
                buf += self._recv()
            try:
                size = int(buf[:i].split(b";")[0], 16)
            except ValueError:
                raise ConnectionError(f"streamscale_env: bad chunk size {bytes(buf[:min(i, 40)])!r}") from None
            if size < 0:
                raise ConnectionError("streamscale_env: negative chunk size")
            buf = buf[i + 2:]
            if size == 0:
                while not buf.startswith(b"\r\n") and (j := buf.find(b"\r\n\r\n")) < 0:
                    buf += self._recv()
                return body, buf[2:] if buf.startswith(b"\r\n") else buf[j + 4:]
            while len(buf) < size + 2:
                buf += self._recv()
            body += buf[:size]
            buf = buf[size + 2:]

    def create(self, request):
        """Creates envs: the parsed JSON create response."""
        return json.loads(bytes(self.call(OP_CREATE, 0, json.dumps(request).encode())))

    def json(self, method, path, obj=None):
        body = None if obj is None else json.dumps(obj).encode()
        return json.loads(self.request(method, path, body))

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _raise_error(status, data):
    try:
        e = json.loads(bytes(data))
        code, msg = e.get("code", "?"), e.get("error", "")
    except (ValueError, AttributeError):
        raise ServerError(status, "?", bytes(data[:200]).decode("utf-8", "replace")) from None
    raise ServerError(status, code, msg)


def _is_repo(d):
    try:
        with open(os.path.join(d, "go.mod")) as f:
            return f.readline().strip() == "module streamscale" and os.path.isdir(os.path.join(d, "serve"))
    except OSError:
        return False


def repo_root():
    """The streamscale checkout to build ``serve env`` from, or None:
    $STREAMSCALE_REPO, else the checkout this package sits in (used from
    python/ in place), else the working directory or one of its parents."""
    env = os.environ.get("STREAMSCALE_REPO")
    if env:
        if not _is_repo(env):
            raise RuntimeError(f"streamscale_env: STREAMSCALE_REPO={env} is not a streamscale checkout (no go.mod of module streamscale)")
        return os.path.abspath(env)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if _is_repo(here):
        return here
    d = os.getcwd()
    while True:
        if _is_repo(d):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


_built = {}  # repo → binary built by this process


def server_binary():
    """The ``serve`` program to run as ``serve env``: $STREAMSCALE_ENV_BIN,
    else ``streamscale-serve`` on PATH, else one built here with
    ``go build ./serve`` from repo_root() (once per process, into a cache
    directory; Go's build cache makes a rebuild of unchanged sources quick)."""
    env = os.environ.get("STREAMSCALE_ENV_BIN")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise RuntimeError(f"streamscale_env: STREAMSCALE_ENV_BIN={env} is not an executable file")
        return env
    found = shutil.which("streamscale-serve")
    if found:
        return found
    repo = repo_root()
    if repo is None:
        raise RuntimeError("streamscale_env: no serve env to start: set STREAMSCALE_ENV_BIN to a binary built with "
                           "`go build -o streamscale-serve ./serve`, put streamscale-serve on PATH, set STREAMSCALE_REPO "
                           "to a streamscale checkout to build it from, or pass addr= of a running `serve env`")
    if repo in _built:
        return _built[repo]
    go = shutil.which("go")
    if go is None:
        raise RuntimeError(f"streamscale_env: building serve env from {repo} needs Go (https://go.dev/doc/install), "
                           "and no `go` is on PATH; or set STREAMSCALE_ENV_BIN to a built binary")
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "streamscale_env")
    try:
        os.makedirs(cache, exist_ok=True)
    except OSError:
        cache = tempfile.mkdtemp(prefix="streamscale_env-")
    out = os.path.join(cache, "streamscale-serve-" + hashlib.sha256(repo.encode()).hexdigest()[:12])
    print(f"streamscale_env: building serve env: go build -o {out} ./serve (in {repo}; first use in this process)",
          file=sys.stderr, flush=True)
    r = subprocess.run([go, "build", "-o", out, "./serve"], cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"streamscale_env: go build ./serve in {repo} failed (exit {r.returncode}):\n{r.stdout[-2000:]}")
    _built[repo] = out
    return out


class LocalServer:
    """A ``serve env`` process, the program server_binary() finds, on a
    Unix socket in a fresh temporary directory (``unix=True``, the default
    where the platform has them: a round trip costs less than over
    loopback TCP) or a free loopback port. stop() ends it (its process
    group) and removes the directory."""

    def __init__(self, extra_args=(), start_timeout=120.0, unix=None):
        if unix is None:
            unix = hasattr(socket, "AF_UNIX") and os.name == "posix"
        self._dir = tempfile.mkdtemp(prefix="streamscale_env-") if unix else None
        listen = f"unix:{os.path.join(self._dir, 'env.sock')}" if unix else "127.0.0.1:0"
        # -exit-with-stdin: the server exits when its standard input, a
        # pipe this process holds and never writes, ends -- so it does not
        # outlive this process even when this one is killed.
        cmd = [server_binary(), "env", "-addr", listen, "-exit-with-stdin", *extra_args]
        # In a checkout the server finds ../shared/data/traces beside it
        # (traces.DefaultDir; $STREAMSCALE_TRACES overrides).
        self.proc = subprocess.Popen(cmd, cwd=repo_root(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True, text=True)
        # The server's stderr is drained for its life (a pipe nobody reads
        # blocks a chatty server once it fills); its tail is kept for errors.
        self._stderr_tail = collections.deque(maxlen=50)
        self._stderr_reader = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_reader.start()
        line = [None]
        reader = threading.Thread(target=lambda: line.__setitem__(0, self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(start_timeout)
        if not line[0] or not line[0].startswith(("http://", "unix:")):
            self._kill()
            self._stderr_reader.join(5)
            err = "".join(self._stderr_tail)[-2000:]
            self.stop()
            raise RuntimeError(f"streamscale_env: {' '.join(cmd)} did not print its address: {err}")
        self.addr = line[0].strip().removeprefix("http://")
        # Later stdout lines are drained too, for the same reason.
        threading.Thread(target=self._drain, args=(self.proc.stdout,), daemon=True).start()

    def _drain_stderr(self):
        try:
            for l in self.proc.stderr:
                self._stderr_tail.append(l)
        except (ValueError, OSError):  # closed by stop()
            pass

    @staticmethod
    def _drain(f):
        try:
            for _ in f:
                pass
        except (ValueError, OSError):
            pass

    def _kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def stop(self):
        self._kill()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f:
                f.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def connect(addr):
    """Returns (Connection, LocalServer or None): addr, else
    $STREAMSCALE_ENV_ADDR, else a server started here. The connection
    speaks frames ($STREAMSCALE_ENV_TRANSPORT "stream", the default) or
    plain HTTP ("http")."""
    transport = os.environ.get("STREAMSCALE_ENV_TRANSPORT") or "stream"
    if transport not in _TRANSPORTS:
        raise ValueError(f"streamscale_env: STREAMSCALE_ENV_TRANSPORT={transport!r}, want one of {', '.join(_TRANSPORTS)}")
    addr = addr or os.environ.get("STREAMSCALE_ENV_ADDR")
    server = None
    if not addr:
        server = LocalServer()
        addr = server.addr
    return Connection(addr, stream=transport == "stream"), server

