"""A README as a script: its ``sh`` blocks run in order, in one shell, and what the text says
they print is checked.

The Markdown stays written for people; what the test needs beyond the commands themselves is a
few HTML comments, invisible when the page is rendered:

- A command that keeps running — ``make up``, ``make broker``, or one whose comment says it runs
  ``in another terminal`` or that ``Ctrl-C`` stops it — starts in the background, in a process
  group of its own, and gets Ctrl-C (SIGINT) when the page is done, last started first.
- ``<!-- wait: REGEX -->`` after a block: wait (up to three minutes) until the output of the
  block's background command matches.
- An unlabelled fenced block right after an ``sh`` block is what that block prints: each of its
  lines must be a line of the output (``…`` matches anything; the order is not checked, as
  output from several partitions interleaves).
- ``<!-- expect: REGEX -->`` after a block: the block's output must match (``re.MULTILINE``).
- ``<!-- retry -->`` after a block: it only reads, and what it reads arrives asynchronously; run it
  again (for up to three minutes) until its expectations hold.

Everything else in a block runs as written, in one ``bash`` session per page, so ``cd``,
``export`` and ``. .venv/bin/activate`` carry over from block to block; a command that exits
with a status other than 0 fails the page. ``make test`` is not run: this test is part of it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
DIRECTIVE = re.compile(r"<!--\s*(wait|expect|retry)\s*:?\s*(.*?)\s*-->")
KEEPS_RUNNING = re.compile(r"#.*(in another terminal|Ctrl-C)", re.IGNORECASE)
LONG_RUNNING_COMMANDS = ("make up", "make broker")
WAIT_S = 180.0


@dataclass
class Command:
    """One logical shell command: continuation lines and here-documents joined."""

    text: str
    line: int  # where it starts in the page

    @property
    def background(self) -> bool:
        """Whether it keeps running; its comment ends the first line, or the last one of a
        command continued with ``\\``."""
        lines = self.text.splitlines()
        command = lines[0].split("#", 1)[0].strip()
        ends = (lines[0], lines[-1])
        return command in LONG_RUNNING_COMMANDS or any(KEEPS_RUNNING.search(e) for e in ends)

    @property
    def skipped(self) -> bool:
        """``make test`` is the suite this test runs in."""
        return self.text.split("#", 1)[0].strip() == "make test"


@dataclass
class Block:
    """An ``sh`` block and what the page says about its output."""

    commands: list[Command]
    line: int
    prints: list[str] = field(default_factory=list)  # lines of the output block after it
    expect: list[str] = field(default_factory=list)
    wait: list[str] = field(default_factory=list)
    retry: bool = False


def blocks(page: Path) -> list[Block]:
    """The ``sh`` blocks of ``page``, in order, with the expectations written after each."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    number = 0
    last_was_sh = False
    while number < len(lines):
        fence = FENCE.match(lines[number])
        if fence:
            indent, language = fence.groups()
            body: list[str] = []
            number += 1
            while number < len(lines) and not FENCE.match(lines[number]):
                body.append(lines[number][len(indent) :])
                number += 1
            start = number - len(body)
            if language == "sh":
                found.append(Block(_commands(body, start + 1), start))
                last_was_sh = True
            elif language == "" and last_was_sh and found:
                found[-1].prints.extend(line for line in body if line.strip())
                last_was_sh = False
            else:
                last_was_sh = False
        else:
            for kind, argument in DIRECTIVE.findall(lines[number]):
                if not found:
                    raise ValueError(f"{page}:{number + 1}: {kind} before any sh block")
                if kind == "retry":
                    found[-1].retry = True
                else:
                    getattr(found[-1], kind).append(argument)
            if lines[number].strip():
                last_was_sh = last_was_sh and lines[number].lstrip().startswith("<!--")
        number += 1
    return found


def _commands(body: list[str], first_line: int) -> list[Command]:
    commands: list[Command] = []
    current: list[str] = []
    heredoc: str | None = None
    start = first_line
    for offset, text in enumerate(body):
        if not current:
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            start = first_line + offset
        current.append(text)
        if heredoc is not None:
            if text.strip() == heredoc:
                heredoc = None
            else:
                continue
        else:
            marker = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", text)
            if marker:
                heredoc = marker.group(1)
                continue
            if text.rstrip().endswith("\\"):
                continue
        commands.append(Command("\n".join(current), start))
        current = []
    if current:
        commands.append(Command("\n".join(current), start))
    return commands


def output_matches(output: str, block: Block) -> list[str]:
    """What of ``block``'s expectations ``output`` does not meet (empty: all met)."""
    missing: list[str] = []
    present = [line.rstrip() for line in output.splitlines()]
    for want in block.prints:
        pattern = re.compile(
            "^" + ".*".join(re.escape(part) for part in want.rstrip().split("…")) + "$"
        )
        if not any(pattern.match(line) for line in present):
            missing.append(f"a line like {want!r}")
    for regex in block.expect:
        if not re.search(regex, output, re.MULTILINE):
            missing.append(f"output matching {regex!r}")
    return missing


class Session:
    """One ``bash`` for a page: commands run in it in order; background ones in groups of their
    own, each stopped with SIGINT at :meth:`close`."""

    def __init__(
        self,
        folder: Path,
        work: Path,
        environment: dict[str, str],
        *,
        own_network: bool = False,
    ) -> None:
        """``own_network``: the shell and all it starts live in a network namespace of their own
        (a loopback of their own: several pages can use 127.0.0.1:9092 at once; root only)."""
        self.folder = folder
        self.work = work
        self.count = 0
        self.background: list[tuple[int, Path, Command]] = []
        shell = ["bash", "--noprofile", "--norc"]
        if own_network:
            shell = ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
            shell += ["bash", "--noprofile", "--norc"]
        self.shell = subprocess.Popen(
            shell,
            cwd=folder,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )

    def _send(self, script: str) -> None:
        assert self.shell.stdin is not None
        self.shell.stdin.write(script + "\n")
        self.shell.stdin.flush()

    def run(self, command: Command, timeout: float = WAIT_S) -> tuple[int, str]:
        """Run ``command`` in the shell (so that ``cd`` and ``export`` stay); its status and
        output."""
        self.count += 1
        script = self.work / f"{self.count}.sh"
        output = self.work / f"{self.count}.out"
        status = self.work / f"{self.count}.status"
        script.write_text(command.text + "\n")
        self._send(
            f". {script} >{output} 2>&1 </dev/null; echo $? >{status}.tmp; mv {status}.tmp {status}"
        )
        deadline = time.monotonic() + timeout
        while not status.exists():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"line {command.line}: {command.text!r} did not finish in {timeout:.0f} s; "
                    f"output:\n{output.read_text(errors='replace')}"
                )
            if self.shell.poll() is not None:
                raise AssertionError(
                    f"line {command.line}: the shell exited running {command.text!r}"
                )
            time.sleep(0.1)
        return int(status.read_text()), output.read_text(errors="replace")

    def start(self, command: Command) -> Path:
        """Start ``command`` in the background, in a process group of its own; its log."""
        self.count += 1
        script = self.work / f"{self.count}.sh"
        log = self.work / f"{self.count}.log"
        pid = self.work / f"{self.count}.pid"
        script.write_text(command.text + "\n")
        self._send(
            f"setsid bash {script} >{log} 2>&1 </dev/null & echo $! >{pid}.tmp; mv {pid}.tmp {pid}"
        )
        deadline = time.monotonic() + 10
        while not pid.exists():
            assert time.monotonic() < deadline, (
                f"line {command.line}: {command.text!r} did not start"
            )
            time.sleep(0.05)
        group = int(pid.read_text())
        while not _group_made(group):  # until setsid ran: else close() would not find it
            assert time.monotonic() < deadline, (
                f"line {command.line}: {command.text!r} did not start"
            )
            time.sleep(0.01)
        self.background.append((group, log, command))
        return log

    def close(self) -> list[str]:
        """Ctrl-C to every background command, last started first; a command that does not stop
        within a minute is killed. The shell exits. What did not stop cleanly."""
        problems: list[str] = []
        for pid, log, command in reversed(self.background):
            if not _group_alive(pid):
                continue
            os.killpg(pid, signal.SIGINT)
            deadline = time.monotonic() + 60
            while _group_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _group_alive(pid):
                os.killpg(pid, signal.SIGKILL)
                tail = log.read_text(errors="replace")[-2000:]
                problems.append(f"line {command.line}: {command.text!r} ignored Ctrl-C:\n{tail}")
        if self.shell.poll() is None:
            self._send("exit 0")
            try:
                self.shell.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.shell.pid, signal.SIGKILL)
                self.shell.wait(10)
        assert self.shell.stdin is not None
        self.shell.stdin.close()
        return problems


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a group whose members are all zombies is gone for our purposes
    return any(_state(pid) not in ("Z", "") for pid in _members(pgid))


def _group_made(pid: int) -> bool:
    """Whether ``pid`` leads its process group by now (or has exited already)."""
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return True


def _members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    members.append(int(entry.name))
            except ProcessLookupError:
                continue
    return members


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[0]


def run_page(session: Session, page: Path) -> None:
    """Run every block of ``page`` in ``session``; an AssertionError names the line that failed."""
    for block in blocks(page):
        started: list[Path] = []
        failures: list[str] = []
        output = ""
        for command in block.commands:
            if command.skipped:
                continue
            if command.background:
                started.append(session.start(command))
                continue
            status, printed = session.run(command)
            output += printed
            if status != 0:
                failures.append(
                    f"{page.name}:{command.line}: {command.text!r} exited with {status}"
                )
        if failures and not block.retry:
            raise AssertionError("\n".join(failures) + f":\n{output}")
        for regex in block.wait:
            _wait_for(page, block, session, started, regex)
        missing = output_matches(output, block) + failures
        deadline = time.monotonic() + WAIT_S
        while missing and block.retry and time.monotonic() < deadline:
            time.sleep(1)
            output, failures = "", []
            for command in block.commands:
                status, printed = session.run(command)
                output += printed
                if status != 0:
                    failures.append(f"{command.text!r} exited with {status}")
            missing = output_matches(output, block) + failures
        assert not missing, (
            f"{page.name}:{block.line}: expected {'; '.join(missing)}; got:\n{output}"
        )


def _wait_for(page: Path, block: Block, session: Session, logs: list[Path], regex: str) -> None:
    """Until a log of ``logs`` matches; fails at once when their commands have all exited."""
    assert logs, f"{page.name}:{block.line}: wait: without a background command"
    pids = [pid for pid, log, _ in session.background if log in logs]
    deadline = time.monotonic() + WAIT_S
    running = True
    while time.monotonic() < deadline:
        running = any(_group_alive(pid) for pid in pids)
        if any(re.search(regex, _read(log), re.MULTILINE) for log in logs):
            return
        if not running:
            break
        time.sleep(0.5)
    why = "they exited" if not running else f"waited {WAIT_S:.0f} s"
    text = "\n".join(_read(log)[-3000:] for log in logs)
    raise AssertionError(f"{page.name}:{block.line}: {why} before printing {regex!r}:\n{text}")


def _read(log: Path) -> str:
    """What a background command printed so far (its shell may not have opened the log yet)."""
    try:
        return log.read_text(errors="replace")
    except FileNotFoundError:
        return ""
