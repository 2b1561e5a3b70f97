"""The coalescing HTTP transport (server/transport.py): one send per reply, nothing else changed.

Logic tests drive ``CoalescingTransport`` on a real event loop over a recording transport; the
protocol tests serve a small ASGI app with real uvicorn (``http=CoalescingHttp``, uvloop and
httptools, as ``sandbox-env serve`` does) and talk to it with real clients: keep-alive, large
bodies, streamed chunks that must not wait for each other, ``Connection: close``, and a WebSocket
upgrade on the same protocol.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from websockets.sync.client import connect

from sandbox_env.server.transport import CoalescingHttp, CoalescingTransport

from .conftest import ThreadedServer


class Recorder:
    """A transport that records what reaches it."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = self.aborted = self.eof = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def write_eof(self) -> None:
        self.eof = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else default


def _in_loop(body: Any) -> Any:
    async def main() -> Any:
        return await body(asyncio.get_running_loop())
    return asyncio.run(main())


def test_writes_in_one_loop_turn_reach_the_socket_as_one_write_in_order() -> None:
    async def body(loop: asyncio.AbstractEventLoop) -> list[bytes]:
        rec = Recorder()
        t = CoalescingTransport(rec, loop)
        t.write(b"HTTP/1.1 200 OK\r\n\r\n")
        t.writelines([b"ab", bytearray(b"cd"), memoryview(b"ef")])
        t.write(b"")
        assert rec.writes == [] and t.get_write_buffer_size() == 25
        await asyncio.sleep(0)
        t.write(b"next turn")
        await asyncio.sleep(0)
        return rec.writes
    assert _in_loop(body) == [b"HTTP/1.1 200 OK\r\n\r\nabcdef", b"next turn"]


def test_close_and_eof_flush_first_abort_drops_and_the_rest_delegates() -> None:
    async def body(loop: asyncio.AbstractEventLoop) -> Recorder:
        a, b = Recorder(), Recorder()
        ta, tb = CoalescingTransport(a, loop), CoalescingTransport(b, loop)
        ta.write(b"last words")
        ta.write_eof()
        ta.close()
        assert a.writes == [b"last words"] and a.eof and a.closed
        tb.write(b"never sent")
        tb.abort()
        await asyncio.sleep(0)           # the scheduled flush finds nothing to send
        assert ta.get_extra_info("peername") == ("127.0.0.1", 1) and ta.is_closing()
        assert ta.unwrapped is a
        return b
    b = _in_loop(body)
    assert b.writes == [] and b.aborted


def test_a_flush_after_the_peer_went_away_writes_nothing() -> None:
    async def body(loop: asyncio.AbstractEventLoop) -> Recorder:
        rec = Recorder()
        t = CoalescingTransport(rec, loop)
        t.write(b"reply")
        rec.closed = True                 # connection_lost closed the real transport
        await asyncio.sleep(0)
        return rec
    assert _in_loop(body).writes == []


# -- real uvicorn with the protocol ----------------------------------------------------------

STREAM_GATE = threading.Event()
BIG = bytes(range(256)) * 8192           # 2 MiB


async def app(scope: dict, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["type"] == "websocket":
        await receive()
        await send({"type": "websocket.accept"})
        while True:
            msg = await receive()
            if msg["type"] == "websocket.disconnect":
                return
            await send({"type": "websocket.send", "text": "echo:" + msg.get("text", "")})
    path = scope["path"]
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            break
    if path == "/stream":
        # the second chunk is produced only once the client says it has the first: if the first
        # waited for the rest, this would deadlock (the gate times out and the test fails)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"first\n", "more_body": True})
        got = await asyncio.to_thread(STREAM_GATE.wait, 10)
        await send({"type": "http.response.body", "body": b"second\n" if got else b"late\n"})
        return
    out = BIG if path == "/big" else json.dumps({"path": path, "len": len(body)}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/octet-stream"),
                            (b"content-length", str(len(out)).encode())]})
    await send({"type": "http.response.body", "body": out})


WRITES: list[tuple[str, bytes]] = []   # (protocol, bytes) as they reach the real socket


class Counting:
    """The real transport, with each write it gets recorded in WRITES."""

    def __init__(self, transport: Any, name: str) -> None:
        self._transport, self._name = transport, name

    def write(self, data: bytes) -> None:
        WRITES.append((self._name, bytes(data)))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CountedCoalescing(CoalescingHttp):
    def connection_made(self, transport: Any) -> None:
        super().connection_made(Counting(transport, "coalescing"))  # type: ignore[arg-type]


class CountedStock(HttpToolsProtocol):
    def connection_made(self, transport: Any) -> None:
        super().connection_made(Counting(transport, "stock"))  # type: ignore[arg-type]


def _serve(http: type) -> ThreadedServer:
    return ThreadedServer(app, http=http, loop="uvloop", ws="auto", ws_per_message_deflate=False).start()


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """Real uvicorn, once with the coalescing protocol and once with uvicorn's own."""
    started = {name: _serve(http) for name, http in
               (("coalescing", CountedCoalescing), ("stock", CountedStock))}
    yield {name: f"127.0.0.1:{s.port}" for name, s in started.items()}
    for s in started.values():
        s.stop()


@pytest.fixture
def url(servers: dict[str, str]) -> str:
    return servers["coalescing"]


def test_many_requests_on_one_keep_alive_connection(url: str) -> None:
    with httpx.Client(base_url=f"http://{url}") as client:
        for i in range(300):
            r = client.post(f"/n{i}", content=b"x" * i)
            assert r.status_code == 200 and r.json() == {"path": f"/n{i}", "len": i}


def test_a_large_body_arrives_whole_and_a_large_upload_is_read(url: str) -> None:
    with httpx.Client(base_url=f"http://{url}") as client:
        assert client.get("/big").content == BIG
        assert client.post("/up", content=BIG).json() == {"path": "/up", "len": len(BIG)}


def test_a_streamed_chunk_is_sent_before_the_next_one_exists(url: str) -> None:
    STREAM_GATE.clear()
    with httpx.Client(base_url=f"http://{url}", timeout=20) as client, \
            client.stream("GET", "/stream") as r:
        lines = r.iter_lines()
        assert next(lines) == "first"
        STREAM_GATE.set()
        assert next(lines) == "second"


def _one_reply(url: str) -> bytes:
    host, port = url.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"GET /one HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := s.recv(65536):    # Connection: close: the server closes after the reply
            reply += chunk
    return reply


def test_head_and_body_of_a_reply_reach_the_socket_in_one_write(servers: dict[str, str]) -> None:
    for name in ("coalescing", "stock"):
        WRITES.clear()
        reply = _one_reply(servers[name])
        assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b'{"path": "/one", "len": 0}')
        writes = [data for who, data in WRITES if who == name]
        assert b"".join(writes) == reply
        # uvicorn's own protocol writes head and body apart: the difference this module makes
        assert len(writes) == (1 if name == "coalescing" else 2), (name, writes)


def test_a_websocket_upgrade_on_the_coalescing_protocol_works(url: str) -> None:
    with connect(f"ws://{url}/ws") as ws:
        for i in range(50):
            ws.send(f"m{i}")
            assert ws.recv(timeout=5) == f"echo:m{i}"
    with httpx.Client(base_url=f"http://{url}") as client:   # and HTTP still serves after it
        assert client.get("/after").json()["path"] == "/after"
