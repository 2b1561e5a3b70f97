"""One send per reply: uvicorn's HTTP protocol with the writes of one event-loop turn coalesced.

uvicorn writes a response's head and its body with two ``transport.write`` calls, two send
syscalls on loopback and two wake-ups of a client waiting for the reply: on a 2-core machine
the first of them was the largest single cost of a mock step (profiled with py-spy, issue #15).
``CoalescingHttp`` gives its protocol a transport whose writes made in one turn of the loop are
joined and sent once at the end of that turn (``call_soon``): no delay is added, nothing is
reordered, closing flushes first. A connection upgraded to a WebSocket gets the plain
transport back (a frame is already one write; the extra loop callback only cost there).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CoalescingTransport:
    """Wraps a transport: ``write`` buffers, one real write per loop turn; the rest delegates."""

    def __init__(self, transport: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._transport, self._loop = transport, loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending = []
        if not self._transport.is_closing():
            self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending = []
        self._transport.abort()

    @property
    def unwrapped(self) -> Any:
        return self._transport

    def __getattr__(self, name: str) -> Any:  # is_closing, get_extra_info, pause_reading, ...
        return getattr(self._transport, name)


class CoalescingHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol on a ``CoalescingTransport`` (``uvicorn.run(http=...)``)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses: no isinstance check here
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]

    def handle_websocket_upgrade(self) -> None:
        coalescing = self.transport
        assert isinstance(coalescing, CoalescingTransport)
        coalescing.flush()
        self.transport = coalescing.unwrapped
        try:
            super().handle_websocket_upgrade()
        finally:
            self.transport = coalescing
