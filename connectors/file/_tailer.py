"""Following one path: whole lines with byte offsets, through rotation by rename and truncation.

A :class:`Tailer` follows a *path*; the files it reads are identified by inode while open and by
:mod:`fingerprint <sluice.connectors.file._fingerprint>` across restarts. Each line it hands out
carries the source offset to resume after it::

    {"position": <byte after the line's newline>, "fingerprint": <hex>, "inode": <int>}

where ``fingerprint`` covers the file's first ``min(1024, position)`` bytes.

- **Partial lines** — bytes after the last newline are held back until the newline arrives.
- **Rotation by rename** — when the path names a new inode, the old file (still open) is read to
  its end first; once the path no longer names it and it has not grown for ``grace`` seconds, its
  unterminated last line (if any) is handed out and it is closed. Only then is the new file read,
  from 0: no line is lost or repeated, whatever the number of rotations.
- **Truncation** (copytruncate) — the file is shorter than what was read, or its first bytes
  changed: reading restarts at 0.
- **Restart** (:meth:`Tailer.resume`) — the committed offset names the file by fingerprint (and
  inode). If the path still holds it, reading continues at ``position``; if a sibling does (it was
  rotated to ``app.log.1`` meanwhile), that one is finished from ``position`` before the path is
  read from 0; if neither does (truncated, or the old file is gone), the path is read from 0.

Lines are handed out in bulk: :meth:`Tailer.chunk` gives the next whole lines of the oldest file
as one :class:`Chunk` (their bytes as read, split and decoded in single calls), and builds the
offset of each line only when asked (:meth:`Chunk.offsets`); the caller then advances past them.

Delivery is at-least-once: lines after the last committed offset are read again after a crash.
Not thread-safe: one task thread uses a tailer.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "app.log")
>>> with open(path, "wb") as f: _ = f.write(b"one\\ntwo\\npart")
>>> tailer = Tailer(path); tailer.check()
>>> lines = tailer.lines(10); [(line.data, line.offset["position"]) for line in lines]
[(b'one', 4), (b'two', 8)]
>>> tailer.advance(lines[-1].offset["position"]); tailer.lines(10)
[]
>>> tailer.close()
"""

from __future__ import annotations

import codecs
import logging
import os
import stat
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sluice.connectors.file._fingerprint import FINGERPRINT_BYTES, fingerprint, fingerprint_fd

__all__ = ["Chunk", "Line", "Tailer", "rotation_candidates"]

log = logging.getLogger("sluice.connectors.file")

CHUNK = 64 * 1024
MAX_CANDIDATES = 100


@dataclass(frozen=True)
class Line:
    """One whole line: its bytes (no ``\\n``, no trailing ``\\r``) and the offset after it."""

    data: bytes
    start: int
    offset: dict[str, Any]


# Encodings in which 0x0A is only ever a newline, whatever surrounds it (even invalid bytes):
# decoding many lines at once and splitting the text gives each line's own decoding.
_SPLIT_AFTER_DECODING = frozenset(["utf-8", "ascii", "iso8859-1"])


@dataclass(frozen=True)
class Chunk:
    """Whole lines of one file, read in one go: ``data`` holds them with their newlines.

    ``start`` and ``end`` are the file positions of the first byte and of the byte after the
    last newline; a chunk that is not ``terminated`` is a single last line without newline
    (of a rotated-away file). ``head`` is the file's first ``min(1024, end)`` bytes and
    ``fingerprint`` theirs. Offsets per line are computed only on demand (:meth:`offsets`).
    """

    data: bytes
    count: int
    start: int
    end: int
    terminated: bool
    inode: int
    head: bytes
    fingerprint: str

    def offset(self) -> dict[str, Any]:
        """The source offset after the last line."""
        return {"position": self.end, "fingerprint": self.fingerprint, "inode": self.inode}

    def raw_lines(self) -> list[bytes]:
        """Each line's bytes, without the newline (a ``\\r`` before it is kept)."""
        lines = self.data.split(b"\n")
        if self.terminated:
            lines.pop()
        return lines

    def offsets(self) -> list[dict[str, Any]]:
        """The source offset after each line."""
        offsets: list[dict[str, Any]] = []
        position, inode, head = self.start, self.inode, self.head
        for line in self.raw_lines():
            position += len(line) + 1
            mark = self.fingerprint if position >= len(head) else fingerprint(head[:position])
            offsets.append({"position": position, "fingerprint": mark, "inode": inode})
        if offsets and not self.terminated:
            offsets[-1] = self.offset()
        return offsets

    def texts(self, encoding: str) -> list[str]:
        """Each line without a trailing ``\\r``, decoded (undecodable bytes replaced)."""
        if codecs.lookup(encoding).name in _SPLIT_AFTER_DECODING:  # hot path: one decode
            texts = self.data.decode(encoding, errors="replace").split("\n")
            if self.terminated:
                texts.pop()
            if len(texts) == self.count:
                if b"\r" in self.data:  # in these encodings "\r" is the byte 0x0D and back
                    texts = [text[:-1] if text.endswith("\r") else text for text in texts]
                return texts
        return [line.decode(encoding, errors="replace") for line in self.stripped_lines()]

    def stripped_lines(self) -> list[bytes]:
        """Each line's bytes without the newline and a ``\\r`` before it."""
        return [raw[:-1] if raw.endswith(b"\r") else raw for raw in self.raw_lines()]

    def lines(self) -> list[Line]:
        """The lines as :class:`Line` objects."""
        found = []
        start = self.start
        for data, offset in zip(self.stripped_lines(), self.offsets(), strict=True):
            found.append(Line(data, start, offset))
            start = offset["position"]
        return found


class _OpenFile:
    """One opened inode: what was handed out, what was read, and its first bytes."""

    def __init__(self, fd: int, opened_as: str, position: int, now: float) -> None:
        self.fd = fd
        info = os.fstat(fd)
        self.identity = (info.st_dev, info.st_ino)
        self.opened_as = opened_as
        self.position = position  # after the last line handed out and advanced over
        self.read_pos = position  # bytes read from the file
        self.buffer = bytearray()  # the bytes from position to read_pos
        self.newlines = 0  # in buffer
        self.head = bytearray(os.pread(fd, min(FINGERPRINT_BYTES, position), 0))
        self.last_size = info.st_size
        self.last_change = now
        self.named = True  # whether the tailer's path names this inode
        self._full_fingerprint: str | None = None

    def fingerprint(self, end: int) -> str:
        if end >= FINGERPRINT_BYTES and self._full_fingerprint is not None:
            return self._full_fingerprint
        value = fingerprint(bytes(self.head[:end]))
        if end >= FINGERPRINT_BYTES:
            self._full_fingerprint = value
        return value

    def fill(self, want: int, now: float) -> None:
        """Read until ``want`` whole lines are buffered or the end of the file."""
        while self.newlines < want:
            chunk = os.pread(self.fd, CHUNK, self.read_pos)
            if not chunk:
                return
            self.last_change = now
            if self.read_pos < FINGERPRINT_BYTES:
                self.head += chunk[: FINGERPRINT_BYTES - self.read_pos]
            self.buffer += chunk
            self.read_pos += len(chunk)
            self.newlines += chunk.count(b"\n")

    def take(self, limit: int) -> Chunk | None:
        """Up to ``limit`` whole lines from ``position`` (they stay until :meth:`advance`)."""
        if not self.newlines:
            return None
        data = bytes(self.buffer)
        cut = data.rfind(b"\n") + 1  # after the last newline
        count = self.newlines
        if count > limit:  # back to the byte after the limit-th newline
            if count - limit < limit:  # fill() reads little past the lines wanted: the usual
                for _ in range(count - limit):
                    cut = data.rfind(b"\n", 0, cut - 1) + 1
            else:
                cut = len(data) - len(data.split(b"\n", limit)[-1])
            count = limit
        return self._chunk(data[:cut], count, self.position + cut, terminated=True)

    def take_fragment(self) -> Chunk:
        """The unterminated last line (the file will not grow any more)."""
        return self._chunk(bytes(self.buffer), 1, self.read_pos, terminated=False)

    def _chunk(self, data: bytes, count: int, end: int, terminated: bool) -> Chunk:
        head = bytes(self.head[: min(FINGERPRINT_BYTES, end)])
        mark = self.fingerprint(end)
        return Chunk(data, count, self.position, end, terminated, self.identity[1], head, mark)

    def advance(self, end: int) -> None:
        """Mark the lines before file position ``end`` as handed out."""
        consumed = end - self.position
        if consumed <= 0:
            return
        self.newlines -= self.buffer.count(b"\n", 0, consumed)
        del self.buffer[:consumed]
        self.position = end

    def verify(self, size: int) -> None:
        """Restart at 0 when the file was truncated or its first bytes were rewritten."""
        if size < self.read_pos:
            reason = f"truncated to {size} bytes (read up to {self.read_pos})"
        elif (
            size != self.last_size
            and self.head
            and os.pread(self.fd, len(self.head), 0) != self.head
        ):
            reason = "rewritten (its first bytes changed)"
        else:
            self.last_size = size
            return
        log.info("%s was %s: reading it again from the start", self.opened_as, reason)
        self.position = self.read_pos = self.newlines = 0
        self.buffer.clear()
        self.head.clear()
        self._full_fingerprint = None
        self.last_size = size

    def line_number(self, start: int) -> int:
        """The 1-based number of the line that begins at byte ``start``."""
        count, at = 0, 0
        while at < start:
            chunk = os.pread(self.fd, min(CHUNK, start - at), at)
            if not chunk:
                break
            count += chunk.count(b"\n")
            at += len(chunk)
        return count + 1


def _open(path: str) -> int | None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def rotation_candidates(path: str) -> list[str]:
    """Where a rotated-away ``path`` may be now: siblings named like it, newest first.

    For ``logs/app.log``: ``logs/app.log.1``, ``logs/app.log-20240101``, ``logs/app.1.log``…
    """
    directory, name = os.path.split(path)
    stem = name.split(".", 1)[0] or name
    found: list[tuple[float, str]] = []
    try:
        with os.scandir(directory or ".") as entries:
            for entry in entries:
                if entry.name != name and entry.name.startswith(stem) and entry.is_file():
                    found.append((entry.stat().st_mtime, os.path.join(directory, entry.name)))
    except OSError:
        return []
    found.sort(reverse=True)
    return [candidate for _, candidate in found[:MAX_CANDIDATES]]


class Tailer:
    """Follows one path; see the module docstring.

    ``grace`` is how long (seconds) a rotated-away file must stay unchanged before the next file
    is read; ``clock`` returns monotonic seconds.
    """

    def __init__(
        self, path: str, *, grace: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.path = path
        self.grace = grace
        self.clock = clock
        self.files: deque[_OpenFile] = deque()  # oldest first; the last one may be named by path

    def resume(self, offset: Mapping[str, Any] | None, candidates: Iterable[str] = ()) -> None:
        """Open the path (and a rotated-away file to finish first) from a committed offset."""
        position = int(offset.get("position", 0)) if offset else 0
        if offset is None or position <= 0:
            self.check()
            return
        expected = offset.get("fingerprint")
        inode = offset.get("inode")
        names = [self.path] if expected is None else [self.path, *candidates]
        matches: list[tuple[str, int]] = []
        for name in dict.fromkeys(names):
            fd = _open(name)
            if fd is None:
                continue
            if os.fstat(fd).st_size >= position and (
                expected is None or fingerprint_fd(fd, position) == expected
            ):
                matches.append((name, fd))
            else:
                os.close(fd)
        same_inode = [m for m in matches if os.fstat(m[1]).st_ino == inode]
        at_path = [m for m in matches if m[0] == self.path]
        preferred = same_inode or at_path or matches
        for _, fd in preferred[1:] + [m for m in matches if m not in preferred]:
            os.close(fd)
        if not preferred:
            log.info("%s: the file of the committed offset is gone: reading from 0", self.path)
        else:
            name, fd = preferred[0]
            opened = _OpenFile(fd, name, position, self.clock())
            if name != self.path:
                log.info("%s was rotated to %s: finishing it from %d", self.path, name, position)
                opened.named = False
            self.files.append(opened)
        self.check()

    def check(self) -> None:
        """Notice a new file at the path (rotation), a deleted path or a truncated file."""
        try:
            info: os.stat_result | None = os.stat(self.path)
        except OSError:
            info = None
        live = self.files[-1] if self.files else None
        if live is not None and live.named:
            if info is not None and (info.st_dev, info.st_ino) == live.identity:
                live.verify(info.st_size)
                return
            live.named = False
            live.last_change = self.clock()
        if info is None or (live is not None and live.named):
            return
        fd = _open(self.path)
        if fd is not None:
            opened = _OpenFile(fd, self.path, 0, self.clock())
            if live is not None and opened.identity == live.identity:
                os.close(fd)  # the path was renamed away and back
                live.named = True
            else:
                self.files.append(opened)

    def _retirable(self, opened: _OpenFile) -> bool:
        return not opened.named and self.clock() - opened.last_change >= self.grace

    def chunk(self, limit: int) -> Chunk | None:
        """Up to ``limit`` whole lines from the oldest open file, not yet advanced over."""
        while self.files:
            head = self.files[0]
            head.fill(limit, self.clock())
            taken = head.take(limit)
            if taken is not None:
                return taken
            if not self._retirable(head):
                return None
            if head.buffer:
                return head.take_fragment()
            os.close(head.fd)
            self.files.popleft()
            if self.files:
                log.info("%s: finished %s", self.path, head.opened_as)
        return None

    def lines(self, limit: int) -> list[Line]:
        """:meth:`chunk` as :class:`Line` objects."""
        taken = self.chunk(limit)
        return [] if taken is None else taken.lines()

    def advance(self, position: int) -> None:
        """Mark every line before ``position`` (the end of a line or chunk just taken) as
        handed out."""
        self.files[0].advance(position)

    def where(self, line: Line) -> str:
        """``file:line-number`` of a line from the last :meth:`lines` (for error messages)."""
        head = self.files[0]
        return f"{head.opened_as}:{head.line_number(line.start)}"

    def waiting(self) -> bool:
        """Whether a rotated-away file is waiting out its grace period."""
        return any(not opened.named for opened in self.files)

    def close(self) -> None:
        """Close every open file."""
        while self.files:
            os.close(self.files.popleft().fd)
