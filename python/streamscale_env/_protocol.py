"""Wire protocol of ``serve env`` (Go package serve/envserver).

A binary body is a sequence of sections: kind (1 byte) | n (uint32 LE) |
n elements LE, kind ``f`` float32, ``d`` float64, ``i`` int64, ``b`` bool
byte, ``j`` JSON (n bytes). JSON carries metadata only.
"""

import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import threading

import numpy as np

_DTYPES = {b"f": np.dtype("<f4"), b"d": np.dtype("<f8"), b"i": np.dtype("<i8"), b"b": np.dtype("u1"), b"j": np.dtype("u1")}
_HEADER = struct.Struct("<cI")


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


class Connection:
    """One keep-alive HTTP/1.1 connection to a server at ``addr``
    ("host:port" or "http://host:port")."""

    def __init__(self, addr, timeout=120.0):
        addr = addr.removeprefix("http://").rstrip("/")
        host, _, port = addr.rpartition(":")
        self.addr, self._host, self._port, self._timeout = addr, host, int(port), timeout
        self._conn = None

    def request(self, method, path, body=None, ctype="application/json"):
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
                self._conn.connect()
                # One small request per step: do not let Nagle's algorithm
                # hold a segment back waiting for a delayed ACK.
                self._conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                self._conn.request(method, path, body=body, headers={"Content-Type": ctype} if body is not None else {})
                resp = self._conn.getresponse()
                data = resp.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # The server closed an idle keep-alive connection before
                # reading the request: reconnect once.
                self._conn.close()
                self._conn = None
                if attempt:
                    raise
        if resp.status != 200:
            try:
                e = json.loads(data)
                raise ServerError(resp.status, e.get("code", "?"), e.get("error", ""))
            except ValueError:
                raise ServerError(resp.status, "?", data[:200].decode("utf-8", "replace")) from None
        return data

    def json(self, method, path, obj=None):
        body = None if obj is None else json.dumps(obj).encode()
        return json.loads(self.request(method, path, body))

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def repo_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class LocalServer:
    """A ``serve env`` process on a free loopback port: the binary in
    $STREAMSCALE_ENV_BIN if set, else ``go run ./serve`` in the repository.
    stop() ends it (its process group: go run and the program it built)."""

    def __init__(self, extra_args=(), start_timeout=300.0):
        binary = os.environ.get("STREAMSCALE_ENV_BIN")
        args = ["env", "-addr", "127.0.0.1:0", *extra_args]
        cmd = [binary, *args] if binary else ["go", "run", "./serve", *args]
        self.proc = subprocess.Popen(cmd, cwd=repo_root(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True, text=True)
        line = [None]
        reader = threading.Thread(target=lambda: line.__setitem__(0, self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(start_timeout)
        if not line[0] or not line[0].startswith("http://"):
            self.stop()
            raise RuntimeError(f"streamscale_env: {' '.join(cmd)} did not print its address: {self.proc.stderr.read()[-2000:]}")
        self.addr = line[0].strip().removeprefix("http://")

    def stop(self):
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
        for f in (self.proc.stdout, self.proc.stderr):
            if f:
                f.close()


def connect(addr):
    """Returns (Connection, LocalServer or None): addr, else
    $STREAMSCALE_ENV_ADDR, else a server started here."""
    addr = addr or os.environ.get("STREAMSCALE_ENV_ADDR")
    server = None
    if not addr:
        server = LocalServer()
        addr = server.addr
    return Connection(addr), server

