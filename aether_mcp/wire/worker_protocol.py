"""The wire format between Spark workers and their clients: length-prefixed JSON over a Unix socket.

Messages are plain JSON objects; UDF values inside them are encoded with `value_codec`, so
nothing on this channel can carry code.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from typing import Any

HEADER = struct.Struct(">Q")
MAX_MESSAGE_BYTES = 512 * 1024 * 1024
POLL_S = 0.5


class WorkerUnavailable(ConnectionError):
    """The worker could not be reached, did not answer in time, or closed the connection mid-request."""


class RequestCancelled(Exception):
    """The caller cancelled while waiting for the worker's reply."""


def send_message(sock: socket.socket, message: dict[str, Any]) -> None:
    payload = json.dumps(message, allow_nan=True, separators=(",", ":")).encode("utf-8")
    sock.sendall(HEADER.pack(len(payload)) + payload)


def receive_message(sock: socket.socket, *, deadline: float | None = None, cancel: threading.Event | None = None) -> dict[str, Any] | None:
    """The next message, or None when the peer closed the connection cleanly."""
    header = _receive_exactly(sock, HEADER.size, allow_eof=True, deadline=deadline, cancel=cancel)
    if header is None:
        return None
    (length,) = HEADER.unpack(header)
    if length > MAX_MESSAGE_BYTES:
        raise WorkerUnavailable(f"message of {length} bytes exceeds the {MAX_MESSAGE_BYTES}-byte limit")
    payload = _receive_exactly(sock, length, allow_eof=False, deadline=deadline, cancel=cancel)
    assert payload is not None
    message = json.loads(payload)
    if not isinstance(message, dict):
        raise WorkerUnavailable("malformed message (not a JSON object)")
    return message


def request(socket_path: str, message: dict[str, Any], timeout_s: float, cancel: threading.Event | None = None) -> dict[str, Any]:
    """Send one request on a fresh connection and wait for its reply (until timeout_s, or `cancel` is set)."""
    deadline = time.monotonic() + timeout_s
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(min(timeout_s, POLL_S))
        try:
            sock.connect(socket_path)
            sock.settimeout(None)
            send_message(sock, message)
            sock.settimeout(POLL_S)
            reply = receive_message(sock, deadline=deadline, cancel=cancel)
        except RequestCancelled:
            raise
        except (TimeoutError, OSError) as exc:
            raise WorkerUnavailable(f"Spark worker at {socket_path} did not answer ({exc.__class__.__name__}: {exc})") from exc
    if reply is None:
        raise WorkerUnavailable(f"Spark worker at {socket_path} closed the connection without answering (did it crash?)")
    return reply


def _receive_exactly(sock: socket.socket, size: int, *, allow_eof: bool, deadline: float | None = None, cancel: threading.Event | None = None) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        try:
            chunk = sock.recv(min(size - len(chunks), 1 << 20))
        except TimeoutError:
            if cancel is not None and cancel.is_set():
                raise RequestCancelled("the request was cancelled") from None
            if deadline is not None and time.monotonic() > deadline:
                raise
            continue
        if not chunk:
            if allow_eof and not chunks:
                return None
            raise WorkerUnavailable("connection closed mid-message")
        chunks.extend(chunk)
    return bytes(chunks)
