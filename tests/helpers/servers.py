"""Real servers for the notification tests, all on 127.0.0.1 with free ports.

SmtpSink: aiosmtpd (Debian's python3-aiosmtpd) in a thread, optionally with
STARTTLS (self-signed certificate), AUTH, or a fixed rejection of DATA.
SilentServer: accepts TCP connections and never says a word.
HttpReceiver: http.server recording POSTs, answering a chosen status.
Each is a context manager that stops its server on exit.
"""
import asyncio
import http.server
import logging
import os
import socket
import ssl
import subprocess
import threading
import time

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

LOOPBACK = "127.0.0.1"

# aiosmtpd logs every failed handshake with a traceback; the tests provoke them on purpose.
logging.getLogger("mail.log").setLevel(logging.CRITICAL)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_for_port(port, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {LOOPBACK}:{port}")


def closed_port():
    """A port nobody listens on (bound then released)."""
    return free_port()


def make_cert(directory):
    """Self-signed certificate for localhost/127.0.0.1; it is also its own CA file."""
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
         "-days", "3650", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


class _Handler:
    def __init__(self, reject, refuse_rcpt=(), hang=False):
        self.messages = []  # (mail_from, rcpt_tos, content bytes)
        self.hang = hang
        self.hung = threading.Event()
        self.reject = reject
        self.refuse_rcpt = set(refuse_rcpt)
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in self.refuse_rcpt:
            return "550 5.1.1 No such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.hang:
            self.hung.set()
            await asyncio.sleep(3600)  # silent after DATA's final dot
        if self.reject:
            return self.reject
        with self.lock:
            self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content or envelope.content))
        return "250 OK"


class SmtpSink:
    def __init__(self, tls=None, auth=None, reject=None, implicit_tls=None, refuse_rcpt=(),
                 size_limit=None, hang=False):
        """tls: (cert, key) to offer and require STARTTLS; implicit_tls: (cert, key) for
        smtps:// (TLS from the first byte); auth: (user, password) required;
        reject: a reply such as '552 5.3.4 Message too big' for every DATA;
        refuse_rcpt: addresses whose RCPT TO gets 550; size_limit: the SIZE announced
        in EHLO, larger messages refused with 552; hang: never answer DATA (its event
        `hung` is set once a message got that far)."""
        self.port = free_port()
        self.handler = _Handler(reject, refuse_rcpt, hang)
        kwargs = {}
        if size_limit:
            kwargs.update(data_size_limit=size_limit)
        if tls:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(*tls)
            kwargs.update(tls_context=ctx, require_starttls=True)
        if implicit_tls:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(*implicit_tls)
            kwargs.update(ssl_context=ctx)
        if auth:
            user, password = auth

            def authenticator(server, session, envelope, mechanism, data):
                ok = isinstance(data, LoginPassword) and data.login == user.encode() and \
                    data.password == password.encode()
                # handled=False: aiosmtpd then answers 535 itself; with True a refusal gets no reply.
                return AuthResult(success=ok, handled=False)

            kwargs.update(authenticator=authenticator, auth_required=True, auth_require_tls=bool(tls))
        self.controller = Controller(self.handler, hostname=LOOPBACK, port=self.port, **kwargs)

    @property
    def messages(self):
        with self.handler.lock:
            return list(self.handler.messages)

    def __enter__(self):
        self.controller.start()
        return self

    def __exit__(self, *exc):
        self.controller.stop()


class SilentServer:
    """Accepts connections and never answers (a hung relay)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((LOOPBACK, 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        self.sock.settimeout(0.1)
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.conns.append(conn)
            except OSError:
                pass

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop = True
        self.thread.join()
        for c in self.conns:
            c.close()
        self.sock.close()


class HttpReceiver:
    """Records each POST (path, headers, body); answers self.status."""

    def __init__(self, status=200):
        self.status = status
        self.posts = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                receiver.posts.append((self.path, dict(self.headers), body))
                payload = b"ok" if receiver.status < 300 else b"invalid_payload"
                self.send_response(receiver.status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        wait_for_port(self.port)
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
