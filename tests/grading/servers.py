"""Talking to a running Jupyter server or JupyterHub from a test, over loopback only: JSON requests, waiting for a
server to answer, and typing a command into one of its terminals (what a student does in JupyterLab)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import urllib.error
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(method: str, url: str, token: str | None = None, body: object = None, timeout: float = 120) -> tuple[int, object]:
    """(status, JSON or text) of one request; an HTTP error is a status, not an exception."""
    assert url.startswith("http://127.0.0.1:"), url  # loopback only
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"token {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode(errors="replace")
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


def wait_for(url: str, token: str | None = None, seconds: float = 90, ok=(200,)) -> object:
    """Poll ``url`` until it answers with a status in ``ok``; its body."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            status, body = call("GET", url, token, timeout=10)
            if status in ok:
                return body
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            status, body = None, None
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not answer (last status {status}: {str(body)[:300]})")
        time.sleep(0.5)


def terminal(base: str, token: str, command: str, seconds: float = 60) -> str:
    """What ``command`` prints in a new terminal of the Jupyter server at ``base`` (``http://127.0.0.1:PORT/prefix``),
    typed as a student types it."""
    status, made = call("POST", f"{base}/api/terminals", token)
    assert status == 200, (status, made)
    try:
        return asyncio.run(_type(f"{base.replace('http://', 'ws://')}/terminals/websocket/{made['name']}", token,
                                 command, seconds))
    finally:
        call("DELETE", f"{base}/api/terminals/{made['name']}", token)


async def _type(url: str, token: str, command: str, seconds: float) -> str:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    socket_ = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {token}"}))
    marker = "ppedu-done"
    # the marker is printed in two pieces joined by the shell, so the echo of the typed line does not match it
    await socket_.write_message(json.dumps(["stdin", f"{command}; echo ppedu-''done\r"]))
    seen, deadline = "", time.monotonic() + seconds
    while time.monotonic() < deadline:
        message = await asyncio.wait_for(socket_.read_message(), timeout=max(deadline - time.monotonic(), 0.1))
        if message is None:
            break
        kind, *rest = json.loads(message)
        if kind == "stdout":
            seen += rest[0]
            if f"\n{marker}" in seen.replace("\r", ""):
                break
    socket_.close()
    return seen.replace("\r", "")
