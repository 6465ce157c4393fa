"""Kafka frames received straight into their own buffers: the broker's asyncio protocol.

Every request is a 4-byte big-endian size followed by that many bytes. :class:`FrameProtocol`
is an :class:`asyncio.BufferedProtocol`: the event loop (uvloop) ``recv``s into the buffers it
hands out — first 4 bytes for the size, then exactly the frame — so each byte of a request is
copied once, by the kernel, into the buffer the handlers read (and in which Produce patches the
base offset before the log writes it). asyncio's streams copied every byte three more times:
into the ``StreamReader``'s ``bytearray``, out of it as ``bytes``, and the rest of the buffer
moved down.

One frame at a time, as Kafka does (it mutes a channel until the response is sent): when a
frame is complete the protocol stops reading, and reads again only when the connection's task
asks for the next frame. So the requests of a connection are handled one at a time and in
order; the next request waits in the kernel's socket buffer (and the client's, by TCP flow
control), never in ours. (The server asks for the next frame before answering only behind an
``acks=all`` Produce waiting for its replicas: :mod:`sluice.broker.server`.)

Responses go back through the transport (:meth:`FrameProtocol.write`), except a Fetch
response, which comes in parts — its framing bytes and the file regions of its records — and
goes out with :meth:`FrameProtocol.send_frame`: on a plaintext socket the records are sent from
the segment files with ``os.sendfile`` (the kernel's copy from the page cache is the only one),
otherwise (TLS) read in pieces of :data:`READ_PIECE` bytes and written piece by piece. A
response with fewer than
:data:`COPY_BELOW` bytes of records is read and written on a plaintext socket too: for a small
response (a follower's or a caught-up consumer's fetch of the last few batches) the zero-copy
path's three system calls — the head, ``sendfile``, the rest — cost more than copying.

The size is checked before anything is allocated: below 8 (shorter than a request header) or
above ``socket.request.max.bytes`` fails the connection with
:class:`~sluice.broker.protocol.codec.MalformedRequestError`, whatever follows.

Buffers. A frame of :data:`REUSE_MIN` bytes or more goes into the connection's spare
``bytearray`` (the buffer of its last such frame) when that is large enough, but not more than
twice too large, and nothing refers to it any more (:func:`unshared`); otherwise into a new one,
which becomes the spare once the frame is complete. A producer's ~1 MB requests thus reuse one
buffer instead of allocating and zero-filling 1 MB per request; smaller frames get their own
(cheap) buffer. A client cannot make the broker hold much more memory than it sent: a frame
above :data:`GROW_FROM` bytes starts in a buffer of that size, and each time that is full the
bytes move to one twice as large (up to the frame's size). Only such large frames pay for it:
about one more copy of their bytes. (Kafka allocates the announced size at once.) A spare that
waits :data:`SPARE_IDLE_S` for the next frame is dropped: an idle producer's connection holds
no megabyte.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable
from typing import Any, cast

from sluice.broker.log.region import FileRegion
from sluice.broker.protocol.codec import MalformedRequestError
from sluice.broker.protocol.fetch_response import OutgoingFrame
from sluice.errors import StorageError

__all__ = [
    "COPY_BELOW",
    "GROW_FROM",
    "REUSE_MIN",
    "SPARE_IDLE_S",
    "ConnectionClosedError",
    "FrameProtocol",
    "unshared",
]

REUSE_MIN = 64 * 1024
"""Frames from this size on may reuse the connection's spare buffer."""

GROW_FROM = 1 << 20
"""Frames above this size get their buffer in steps, as their bytes arrive."""

COPY_BELOW = 64 * 1024
"""A Fetch response whose records are fewer bytes than this is read and written, not sent
with ``os.sendfile``."""

READ_PIECE = 256 * 1024
"""A region sent without ``sendfile`` (TLS) is read and written in pieces of at most this: each
piece is encrypted and leaves as its own ciphertext, instead of a whole fetch (up to
``max.partition.fetch.bytes``, 10 MB in the benchmarks) read into one ``bytes`` and encrypted
into another. Buffers that large come from fresh pages each time (glibc maps and unmaps them):
~300,000 page faults per 600 MB read: a TLS consume's broker at 0.85–0.92 cores in the runs
that met them, 0.40–0.43 with pieces (2026-11-29, docs/benchmarks.md)."""

SPARE_IDLE_S = 2.0
"""A connection's spare buffer is dropped when no frame comes for this long."""

_SIZE_BYTES = 4
_MIN_FRAME = 8  # api_key, api_version, correlation_id: a request header's fixed part


class ConnectionClosedError(ConnectionError):
    """The client closed the connection (or it was lost) before a whole frame arrived."""


def unshared(buffer: bytearray) -> bool:
    """Whether no memoryview (or other buffer export) of ``buffer`` is alive.

    A ``bytearray`` refuses to change size while exported, so popping and re-appending its last
    byte is a check that costs O(1) (no reallocation: the size goes down and back up within the
    allocation). A frame's views may outlive its request only through a bug — say a handler
    keeping a batch — and this keeps such a bug from corrupting that batch: the buffer is then
    left to its holder and the next frame gets a new one.
    """
    try:
        last = buffer.pop()
    except BufferError:
        return False
    buffer.append(last)
    return True


class FrameProtocol(asyncio.BufferedProtocol):
    """One client connection: whole request frames for its task, responses back.

    ``on_connect`` is called with the protocol once the connection is made (the server starts
    the connection's task there). The task loops on :meth:`next_frame`, handles the frame,
    calls :meth:`done_with` and writes the response with :meth:`write` / :meth:`drain`.

    The other end of a connection uses it too: a broker's connection to another broker
    (:class:`~sluice.broker.replication.client.BrokerClient`) writes requests and takes the
    response frames (``min_frame=4``, ``what="response"``, no ``sendfile``).
    """

    def __init__(
        self,
        max_frame: int,
        on_connect: Callable[[FrameProtocol], None],
        *,
        sendfile: bool = True,
        copy_below: int = COPY_BELOW,
        min_frame: int = _MIN_FRAME,
        what: str = "request",
    ) -> None:
        self.max_frame = max_frame
        self.min_frame = min_frame
        self._what = what  # what the frames are, in errors
        self._on_connect = on_connect
        self._sendfile = sendfile
        self._copy_below = copy_below
        self._out: socket.socket | None = None  # a duplicate of the socket, for send_frame
        self._writable: asyncio.Future[None] | None = None  # send_frame waiting for the socket
        self.transport: asyncio.Transport | None = None
        self._head = bytearray(_SIZE_BYTES)
        self._head_view = memoryview(self._head)
        self._target = self._head_view  # where received bytes go: the size, then the frame
        self._got = 0  # bytes of _target received so far
        self._size = 0  # the frame's size once its prefix is in, 0 while reading the prefix
        self._spare: bytearray | None = None
        self._ready: memoryview | None = None  # a whole frame the task has not taken yet
        self._failure: BaseException | None = None  # what next_frame raises once _ready is taken
        self._waiter: asyncio.Future[None] | None = None  # the task waiting in next_frame
        self._write_paused = False
        self._lost = False
        self._drain_waiter: asyncio.Future[None] | None = None
        self._gone = asyncio.Event()  # set once the connection is lost or closed

    # -- asyncio callbacks ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCPTransport has asyncio.Transport's methods but is not a subclass
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if self._sendfile and sock is not None and transport.get_extra_info("sslcontext") is None:
            self._out = socket.socket(fileno=os.dup(sock.fileno()))
            self._out.setblocking(False)
        self._on_connect(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        # Hot path (called per recv): exactly the bytes still missing, so that a read never
        # runs past the size or the frame. A frame is never empty (size >= 8).
        return self._target[self._got :]

    def buffer_updated(self, nbytes: int) -> None:
        # Hot path (called per recv): most calls only add up the bytes.
        self._got += nbytes
        if self._got < len(self._target):
            return
        if self._size == 0:  # the size prefix is in
            size = int.from_bytes(self._head, "big", signed=True)
            if size < self.min_frame or size > self.max_frame:
                self._fail(
                    MalformedRequestError(
                        f"{self._what} size {size} is outside [{self.min_frame}, {self.max_frame}]"
                    )
                )
                return
            self._size, self._got = size, 0
            self._target = self._buffer_for(size)
        elif self._got < self._size:  # a large frame filled its buffer so far
            self._target = _grown(self._target, self._size)
        else:
            self._frame_complete()

    def eof_received(self) -> bool:
        """Keep the transport open for writing (a client may half-close after its request);
        the task sees the end at its next :meth:`next_frame` and closes the connection. (TLS
        has no half-close: there the transport closes.)"""
        self._fail(ConnectionClosedError("the client closed the connection"))
        return self.transport is None or self.transport.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._gone.set()
        self._fail(ConnectionClosedError(f"connection lost: {exc}" if exc else "connection closed"))
        self._target, self._got, self._size = self._head_view, 0, 0
        self._spare = None
        for waiter in (self._drain_waiter, self._writable):
            if waiter is not None and not waiter.done():
                waiter.set_exception(ConnectionResetError("connection lost"))
        self._close_out()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)

    # -- for the connection's task --------------------------------------------------------------

    @property
    def peer(self) -> Any:
        """The client's address as the transport reports it."""
        return None if self.transport is None else self.transport.get_extra_info("peername")

    async def next_frame(self) -> memoryview:
        """The next whole request frame (without its size prefix), writable.

        Raises :class:`ConnectionClosedError` when the client closed or the connection was lost,
        :class:`MalformedRequestError` for a size out of bounds. Reading resumes here: call it
        once the previous request is handled (the server: answered, or its answer deferred
        with its appends done) and :meth:`done_with` its frame.
        """
        idle: asyncio.TimerHandle | None = None
        try:
            while self._ready is None:
                if self._failure is not None:
                    raise self._failure
                assert self.transport is not None
                self.transport.resume_reading()
                loop = asyncio.get_running_loop()
                if self._spare is not None and idle is None:
                    idle = loop.call_later(SPARE_IDLE_S, self._drop_spare)
                self._waiter = loop.create_future()
                try:
                    await self._waiter
                finally:
                    self._waiter = None
        finally:
            if idle is not None:
                idle.cancel()
        frame, self._ready = self._ready, None
        return frame

    @property
    def spare_bytes(self) -> int:
        """Size of the buffer kept for the connection's next big frame (0: none)."""
        return 0 if self._spare is None else len(self._spare)

    def done_with(self, frame: memoryview) -> None:
        """The task is done with ``frame`` (its buffer may be reused once nothing else holds a
        view of it; see :func:`unshared`)."""
        with contextlib.suppress(BufferError):  # still exported: unshared() will see it too
            frame.release()

    def write(self, data: bytes) -> None:
        """Queue a response; raises ConnectionResetError when the connection is gone (uvloop
        raises RuntimeError for a write to a closed transport)."""
        assert self.transport is not None
        if self._lost or self.transport.is_closing():
            raise ConnectionResetError("connection lost")
        self.transport.write(data)

    @property
    def zero_copy(self) -> bool:
        """Whether :meth:`send_frame` sends file regions with ``os.sendfile`` (a plaintext
        socket, and ``sendfile`` not turned off)."""
        return self._out is not None

    async def send_frame(self, frame: OutgoingFrame) -> None:
        """Send a frame made of parts, then close its regions (whatever happened).

        Zero-copy (:attr:`zero_copy`, and regions of ``copy_below`` bytes or more): once the
        transport has written everything queued before (so that responses stay in order), the
        parts go straight to the socket — the bytes with ``send`` (``MSG_MORE``: they share
        packets with what follows), each region with ``os.sendfile`` from its file, waiting for
        the socket whenever it is full. Otherwise the parts are given to the transport one
        ``write`` each, the regions read in pieces of :data:`READ_PIECE` bytes (one ``pread``
        each) as they go (no joining).
        """
        try:
            if self._out is None or frame.region_bytes < self._copy_below:
                assert self.transport is not None
                if self._lost or self.transport.is_closing():
                    raise ConnectionResetError("connection lost")
                # one write a piece, each read when its turn comes: each piece is encrypted on
                # its own and its buffer reused. A file found short fails the frame part-sent,
                # as sendfile's does: the connection is closed.
                write = self.transport.write
                for part in frame.parts:
                    if isinstance(part, FileRegion):
                        for piece in part.read_pieces(READ_PIECE):
                            write(piece)
                    else:
                        write(part)
                return
            while self.write_buffer_size():
                await self._wait_writable()
            last = len(frame.parts) - 1
            for i, part in enumerate(frame.parts):
                if isinstance(part, FileRegion):
                    await self._send_region(part)
                else:
                    await self._send_bytes(part, more=i < last)
        finally:
            frame.close()

    async def _send_bytes(self, data: bytes | bytearray, more: bool) -> None:
        out = self._out
        view = memoryview(data)
        flags = socket.MSG_MORE if more else 0
        while view:
            if out is None or self._lost:
                raise ConnectionResetError("connection lost")
            try:
                view = view[out.send(view, flags) :]
            except BlockingIOError:
                await self._wait_writable()

    async def _send_region(self, region: FileRegion) -> None:
        position, end = region.position, region.position + region.size
        while position < end:
            out = self._out
            if out is None or self._lost:
                raise ConnectionResetError("connection lost")
            try:
                sent = os.sendfile(out.fileno(), region.fd, position, end - position)
            except BlockingIOError:
                await self._wait_writable()
                continue
            if sent == 0:  # the file is shorter than the region: never send a short frame
                raise StorageError(f"segment file ended inside {region}")
            position += sent

    async def _wait_writable(self) -> None:
        """Wait until the socket takes more bytes (watched through the duplicate, which the
        event loop accepts beside the transport's own registration of the socket)."""
        assert self._out is not None
        loop = asyncio.get_running_loop()
        fd = self._out.fileno()
        self._writable = waiter = loop.create_future()
        loop.add_writer(fd, _wake_once, waiter)
        try:
            await waiter
        finally:
            self._writable = None
            if self._out is not None:
                loop.remove_writer(fd)

    def write_buffer_size(self) -> int:
        assert self.transport is not None
        return self.transport.get_write_buffer_size()

    async def drain(self) -> None:
        """Wait until the transport's write buffer is below its low-water mark again."""
        if self._lost:
            raise ConnectionResetError("connection lost")
        if not self._write_paused:
            return
        self._drain_waiter = asyncio.get_running_loop().create_future()
        try:
            await self._drain_waiter
        finally:
            self._drain_waiter = None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self._close_out()

    async def wait_closed(self) -> None:
        """Wait until the connection is gone (after :meth:`close`, or lost)."""
        if self.transport is not None:
            await self._gone.wait()

    def _close_out(self) -> None:
        """Close the socket's duplicate (the connection ends only once both are closed)."""
        out, self._out = self._out, None
        if out is not None:
            if self._writable is not None:
                asyncio.get_running_loop().remove_writer(out.fileno())
            out.close()

    # -- internals ------------------------------------------------------------------------------

    def _buffer_for(self, size: int) -> memoryview:
        """Where a frame of ``size`` bytes starts (see the module docstring)."""
        spare = self._spare
        if (
            size >= REUSE_MIN
            and spare is not None
            and size <= len(spare) < 2 * size
            and unshared(spare)
        ):
            return memoryview(spare)[:size]
        return memoryview(bytearray(min(size, GROW_FROM)))

    def _drop_spare(self) -> None:
        self._spare = None

    def _frame_complete(self) -> None:
        """Hand the frame to the task (its buffer becomes the spare) and stop reading."""
        frame = self._target
        if self._size >= REUSE_MIN:
            self._spare = cast(bytearray, frame.obj)
        self._target, self._got, self._size = self._head_view, 0, 0
        assert self.transport is not None
        self.transport.pause_reading()  # mute the channel until the task asks for more
        self._ready = frame
        self._wake()

    def _fail(self, exc: BaseException) -> None:
        """End reading: ``exc`` is what the task gets after any whole frame still pending."""
        if self._failure is None:
            self._failure = exc
        if self.transport is not None:
            self.transport.pause_reading()
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


def _wake_once(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _grown(buffer: memoryview, size: int) -> memoryview:
    """A buffer twice as large as the full ``buffer`` (at most ``size``) holding its bytes."""
    grown = bytearray(min(size, 2 * len(buffer)))
    grown[: len(buffer)] = buffer
    buffer.release()
    return memoryview(grown)
