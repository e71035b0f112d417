"""The client's HTTP/1.1 framing, frame protocol and section decoding,
against scripted socket servers (no serve env needed)."""

import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

import numpy as np

from streamscale_env import _protocol
from streamscale_env._protocol import Connection, ServerError, StepFrame, decode, encode_actions


class Scripted:
    """A loopback server answering each accepted connection's requests with
    the next scripted replies: bytes to send, ("cut", bytes) to send and
    close the connection, or None to close it without answering. It records the requests it read."""

    def __init__(self, script):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.script, self.requests = list(script), []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def read_request(self, c, buf):
        while b"\r\n\r\n" not in buf:
            b = c.recv(65536)
            if not b:
                return None, b""
            buf += b
        head, _, rest = buf.partition(b"\r\n\r\n")
        n = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        while len(rest) < n:
            rest += c.recv(65536)
        return head + b"\r\n\r\n" + rest[:n], rest[n:]

    def serve(self):
        while self.script:
            c, _ = self.sock.accept()
            buf = b""
            with c:
                while self.script:
                    req, buf = self.read_request(c, buf)
                    if req is None:
                        break
                    self.requests.append(req)
                    reply = self.script.pop(0)
                    if reply is None:
                        break
                    if isinstance(reply, tuple):
                        c.sendall(reply[1])
                        break
                    c.sendall(reply)
                    if b"Connection: close" in reply.split(b"\r\n\r\n")[0]:
                        break

    def close(self):
        self.sock.close()


def ok(body, extra=b""):
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n" % (len(body), extra) + body


class ConnectionTest(unittest.TestCase):
    def run_script(self, script, calls):
        srv = Scripted(script)
        conn = Connection(srv.addr, timeout=10)
        try:
            return [call(conn) for call in calls], srv.requests
        finally:
            conn.close()
            srv.close()

    def test_framings(self):
        chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n5;x=1\r\ndefgh\r\n0\r\nT: 1\r\n\r\n"
        closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-eof"
        got, reqs = self.run_script(
            [ok(b"one"), chunked, ok(b""), closing, ok(b"after")],
            [lambda c: c.request("POST", "/a", b"xyz", "application/octet-stream")] * 5)
        self.assertEqual([bytes(b) for b in got], [b"one", b"abcdefgh", b"", b"until-eof", b"after"])
        self.assertTrue(all(isinstance(b, bytearray) for b in got))
        self.assertIn(b"Content-Length: 3\r\n", reqs[0])
        self.assertTrue(reqs[0].endswith(b"\r\n\r\nxyz"))

    def test_stale_connection_is_retried_once(self):
        # The server closes the kept-alive connection without answering
        # the second request: the client reconnects and sends it again.
        got, reqs = self.run_script([ok(b"1"), None, ok(b"2")], [lambda c: c.request("GET", "/x")] * 2)
        self.assertEqual([bytes(b) for b in got], [b"1", b"2"])
        self.assertEqual(len(reqs), 3)

    def test_error_response(self):
        body = b'{"error":"envserver: bad action: x","code":"bad_action"}'
        err = b"HTTP/1.1 400 Bad Request\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        with self.assertRaises(ServerError) as cm:
            self.run_script([err], [lambda c: c.request("POST", "/s", b"")])
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "bad_action"))

    def test_truncated_response(self):
        with self.assertRaises(ConnectionError):
            self.run_script([("cut", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")], [lambda c: c.request("GET", "/")])

    def test_bad_framing(self):
        for reply in (b"SSH-2.0-x\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                      b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"):
            with self.subTest(reply), self.assertRaises(ConnectionError):
                self.run_script([("cut", reply)], [lambda c: c.request("GET", "/")])


    def test_mutated_responses(self):
        """Corrupted responses (bytes flipped, cut short) end in a returned
        body or one of the client's errors, never another exception or a
        hang: a seeded stand-in for fuzzing the HTTP parser."""
        rng = np.random.default_rng(14)
        valid = [ok(b"0123456789" * 30), b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n0\r\n\r\n",
                 b"HTTP/1.1 404 Not Found\r\nContent-Length: 30\r\n\r\n{\"error\":\"no\",\"code\":\"unknown\"}"]
        replies = []
        for i in range(150):
            b = bytearray(valid[i % len(valid)])
            for _ in range(int(rng.integers(1, 4))):
                b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
            replies.append(("cut", bytes(b[:int(rng.integers(1, len(b) + 1))])))
        srv = Scripted(replies)
        try:
            for _ in replies:
                conn = Connection(srv.addr, timeout=10)
                try:
                    conn.request("GET", "/")
                except (ConnectionError, ServerError):
                    pass
                finally:
                    conn.close()
        finally:
            srv.close()


class BoundConnectionTest(unittest.TestCase):
    def test_bound_connection_is_not_replaced(self):
        """Once envs were created over a connection (serve env frees them
        with it), a closed connection raises instead of reconnecting."""
        srv = Scripted([ok(b"1"), None, ok(b"2")])
        conn = Connection(srv.addr, timeout=10)
        try:
            self.assertEqual(bytes(conn.request("GET", "/x")), b"1")
            conn.bound = True
            with self.assertRaises(ConnectionError) as cm:
                conn.request("GET", "/x")
            self.assertIn("freed", str(cm.exception))
        finally:
            conn.close()
            srv.close()


UPGRADED = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: streamscale-env.v1\r\n\r\n"


def reply(status, body):
    return struct.pack("<HI", status, len(body)) + body


class FrameServer:
    """A loopback server that answers the upgrade with ``greeting``, then
    each request frame with the next scripted reply: bytes, ("cut",
    bytes) to send and close the connection, or None to close it. It
    records the frames (op, id, payload)."""

    def __init__(self, script, greeting=UPGRADED):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.script, self.greeting, self.frames, self.upgrades = list(script), greeting, [], []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def read(self, c, buf, n):
        while len(buf) < n:
            b = c.recv(65536)
            if not b:
                return None, buf
            buf += b
        return buf[:n], buf[n:]

    def serve(self):
        while self.script:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return  # closed by the test
            with c:
                buf = b""
                while b"\r\n\r\n" not in buf:
                    b = c.recv(65536)
                    if not b:
                        break
                    buf += b
                head, _, buf = buf.partition(b"\r\n\r\n")
                self.upgrades.append(head)
                c.sendall(self.greeting)
                while self.script:
                    hdr, buf = self.read(c, buf, 13)
                    if hdr is None:
                        break
                    op, id_, n = struct.unpack("<cQI", hdr)
                    payload, buf = self.read(c, buf, n)
                    self.frames.append((op, id_, payload))
                    r = self.script.pop(0)
                    if r is None:
                        break
                    if isinstance(r, tuple):
                        c.sendall(r[1])
                        break
                    c.sendall(r)

    def close(self):
        self.sock.close()


class FrameConnectionTest(unittest.TestCase):
    def test_frames(self):
        big = bytes(range(256)) * 300  # more than the first receive buffer
        srv = FrameServer([reply(200, b"ok"), reply(200, big), reply(200, b""),
                           reply(409, b'{"error":"envserver: not reset","code":"not_reset"}'), reply(200, b"after")])
        conn = Connection(srv.addr, timeout=10, stream=True)
        try:
            self.assertEqual(bytes(conn.call(_protocol.OP_CREATE, 0, b'{"profile":"etl"}')), b"ok")
            self.assertTrue(conn.stream)
            self.assertEqual(bytes(conn.call(_protocol.OP_STEP, 7, b"i\x00\x00\x00\x00")), big)
            self.assertEqual(bytes(conn.call(_protocol.OP_CLOSE, 7)), b"")
            with self.assertRaises(ServerError) as cm:
                conn.call(_protocol.OP_RESET, 7, b"{}")
            self.assertEqual((cm.exception.status, cm.exception.code), (409, "not_reset"))
            self.assertEqual(bytes(conn.call(_protocol.OP_RESET, 7, b"{}")), b"after")  # the stream goes on
        finally:
            conn.close()
            srv.close()
        self.assertIn(b"Upgrade: streamscale-env.v1", srv.upgrades[0])
        self.assertEqual(srv.frames[:3], [(b"C", 0, b'{"profile":"etl"}'), (b"S", 7, b"i\x00\x00\x00\x00"), (b"D", 7, b"")])
        self.assertEqual(len(srv.upgrades), 1)

    def test_bad_frames(self):
        """A cut, oversized or overlong response frame, or an upgrade to
        another protocol, is a ConnectionError, never a hang."""
        for script, greeting in (([("cut", reply(200, b"abcdef")[:7])], UPGRADED),
                                 ([struct.pack("<HI", 200, (1 << 30) + 1)], UPGRADED),
                                 ([reply(200, b"ab") + b"extra"], UPGRADED),
                                 ([reply(200, b"x")], UPGRADED.replace(b"streamscale-env.v1", b"websocket"))):
            with self.subTest(script=script, greeting=greeting):
                srv = FrameServer(script, greeting)
                conn = Connection(srv.addr, timeout=10, stream=True)
                try:
                    with self.assertRaises(ConnectionError):
                        conn.call(_protocol.OP_STEP, 1, b"")
                finally:
                    conn.close()
                    srv.close()

    def test_bound_stream_is_not_replaced(self):
        srv = FrameServer([reply(200, b"1"), None, reply(200, b"2")])
        conn = Connection(srv.addr, timeout=10, stream=True)
        try:
            self.assertEqual(bytes(conn.call(_protocol.OP_CREATE, 0, b"{}")), b"1")
            conn.bound = True
            with self.assertRaises(ConnectionError) as cm:
                conn.call(_protocol.OP_STEP, 1, b"")
            self.assertIn("freed", str(cm.exception))
        finally:
            conn.close()
            srv.close()

    def test_http_fallback(self):
        """A serve env without frames answers the upgrade 404: the client
        stays on HTTP, the operation goes to its route."""
        body = b'{"error":"envserver: bad request: no route GET /v1/stream","code":"route_not_found"}'
        srv = Scripted([b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n" % len(body) + body, ok(b"stepped")])
        conn = Connection(srv.addr, timeout=10, stream=True)
        try:
            self.assertEqual(bytes(conn.call(_protocol.OP_STEP, 3, b"i\x00\x00\x00\x00")), b"stepped")
            self.assertFalse(conn.stream)
        finally:
            conn.close()
            srv.close()
        self.assertTrue(srv.requests[1].startswith(b"POST /v1/envs/3/step HTTP/1.1"))

    def test_transport_variable(self):
        with mock.patch.dict(os.environ, {"STREAMSCALE_ENV_TRANSPORT": "grpc"}), self.assertRaises(ValueError):
            _protocol.connect("127.0.0.1:1")


class SilentFrameServer:
    """Answers the upgrade, reads request frames and never replies (a
    hung serve env), until closed."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        try:
            c, _ = self.sock.accept()
        except OSError:
            return
        with c:
            buf = b""
            while b"\r\n\r\n" not in buf:
                b = c.recv(65536)
                if not b:
                    return
                buf += b
            c.sendall(UPGRADED)
            self.done.wait(30)

    def close(self):
        self.done.set()
        self.sock.close()


class FastPathTest(unittest.TestCase):
    def test_step_frame_is_the_encoded_frame(self):
        """StepFrame's reused frame holds what encoding the actions anew
        gives, for int, float and nested-list actions, step after step."""
        f = StepFrame(9, 6)
        for a in (np.arange(6).reshape(2, 3), np.array([[4.0, 3.9, 0.0], [1.0, 2.0, 3.0]]), [[0, 1, 2], [2, 1, 0]],
                  np.zeros((3, 2), dtype=np.int32)):
            f.fill(a)
            body = encode_actions(a)
            self.assertEqual(bytes(f.frame), struct.pack("<cQI", b"S", 9, len(body)) + body)
            self.assertEqual(bytes(f.body), body)

    def test_hung_server_times_out(self):
        """A server that never answers a frame is a TimeoutError after the
        connection's timeout (kernel timeouts on Linux), and the
        connection is closed, never a hang."""
        srv = SilentFrameServer()
        conn = Connection(srv.addr, timeout=0.3, stream=True)
        try:
            with self.assertRaises(TimeoutError):
                conn.call(_protocol.OP_STEP, 1, b"")
            self.assertIsNone(conn._sock)
        finally:
            conn.close()
            srv.close()


class ServerBinaryTest(unittest.TestCase):
    """Where LocalServer finds serve env, and the errors when it cannot."""

    def env(self, **kw):
        base = {k: v for k, v in os.environ.items() if k not in ("STREAMSCALE_ENV_BIN", "STREAMSCALE_REPO")}
        base.update(kw)
        return mock.patch.dict(os.environ, base, clear=True)

    def test_bin(self):
        with tempfile.TemporaryDirectory() as d:
            exe = os.path.join(d, "serve")
            with open(exe, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(exe, 0o755)
            with self.env(STREAMSCALE_ENV_BIN=exe):
                self.assertEqual(_protocol.server_binary(), exe)
            with self.env(STREAMSCALE_ENV_BIN=os.path.join(d, "missing")), self.assertRaises(RuntimeError) as cm:
                _protocol.server_binary()
            self.assertIn("STREAMSCALE_ENV_BIN", str(cm.exception))
            on_path = os.path.join(d, "streamscale-serve")
            os.rename(exe, on_path)
            with self.env(PATH=d):
                self.assertEqual(_protocol.server_binary(), on_path)

    def test_no_repo_no_go(self):
        with tempfile.TemporaryDirectory() as d:
            with self.env(STREAMSCALE_REPO=d), self.assertRaises(RuntimeError) as cm:
                _protocol.server_binary()
            self.assertIn("not a streamscale checkout", str(cm.exception))
            repo = os.path.join(d, "repo")
            os.makedirs(os.path.join(repo, "serve"))
            with open(os.path.join(repo, "go.mod"), "w") as f:
                f.write("module streamscale\n")
            with self.env(STREAMSCALE_REPO=repo, PATH=d), self.assertRaises(RuntimeError) as cm:
                _protocol.server_binary()
            self.assertIn("needs Go", str(cm.exception))


class LocalServerTest(unittest.TestCase):
    def test_chatty_stderr_does_not_block(self):
        # A server that writes 1 MiB to stderr before its address: with the
        # pipe undrained (64 KiB) it would block and never print it.
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "serve")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nhead -c 1048576 /dev/zero | tr '\\0' x >&2\necho http://127.0.0.1:1\n"
                        "exec sleep 30\n")
            os.chmod(fake, 0o755)
            with mock.patch.dict(os.environ, {"STREAMSCALE_ENV_BIN": fake}):
                srv = _protocol.LocalServer(start_timeout=20, unix=False)
            try:
                self.assertEqual(srv.addr, "127.0.0.1:1")
            finally:
                srv.stop()
            self.assertIsNotNone(srv.proc.poll())

    def test_server_does_not_outlive_a_killed_client(self):
        # A client process killed with SIGKILL cannot stop its server; the
        # server's -exit-with-stdin sees the pipe end and exits by itself.
        child = subprocess.Popen(
            [sys.executable, "-c",
             "import sys, time\n"
             "from streamscale_env import _protocol\n"
             "srv = _protocol.LocalServer()\n"
             "print(srv.proc.pid, flush=True)\n"
             "time.sleep(120)\n"],
            stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        try:
            line = child.stdout.readline()
            self.assertTrue(line.strip().isdigit(), f"child printed {line!r}")
            pid = int(line)
            os.kill(pid, 0)  # the server is running
        finally:
            child.kill()
            child.wait()
            child.stdout.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            # A zombie (exited, not yet reaped by init) counts as gone.
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(") ", 1)[1].startswith("Z"):
                        return
            except OSError:
                return
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        self.fail(f"serve env (pid {pid}) still running 20 s after its client was killed")


class DecodeTest(unittest.TestCase):
    def test_round_trip_and_errors(self):
        body = bytearray(encode_actions([[1, 2], [3, 4]]) + b"d\x01\x00\x00\x00" + np.float64(2.5).tobytes()
                         + b'j\x02\x00\x00\x00{}')
        secs = decode(body)
        self.assertEqual([k for k, _ in secs], [b"i", b"d", b"j"])
        self.assertEqual(secs[0][1].tolist(), [1, 2, 3, 4])
        self.assertEqual(secs[1][1].tolist(), [2.5])
        self.assertEqual(secs[2][1], {})
        secs[0][1][0] = 9  # views of a writable buffer
        self.assertEqual(body[5], 9)
        for bad in (b"i\x02\x00\x00\x00" + bytes(8), b"x\x00\x00\x00\x00", b"f\x01"):
            with self.assertRaises(ValueError):
                decode(bad)


if __name__ == "__main__":
    unittest.main()
