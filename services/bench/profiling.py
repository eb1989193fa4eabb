"""Sampling profiles of a private mesh's services with py-spy, summed up per operation.

One ``py-spy record`` per service process (non-blocking: the service is never paused) writes collapsed
stacks (``--format raw``, root first); :func:`summarise` turns them into each service's top functions by
CPU milliseconds per operation: *self* (the function itself was on the CPU) and *inclusive* (it or what it
called; only the project's own functions, the ones a change can cut). py-spy means to leave idle threads
out, but without pausing the process it still counts many samples of a thread waiting in the event loop's
``select`` or an idle pool worker (about twice the CPU the process really used): samples whose innermost
frame is such a wait (:data:`WAIT_LEAVES`) are counted apart, and the others share out the CPU the meter
(``/proc``) measured for the process. The meter stays the figure of record: the profile says where, not
how much. Threads with no Python frame (a native library's own pool) are not seen at all. py-spy is not a
dependency: without it the profile is skipped with a note.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STOP_TIMEOUT = 30.0
TOP = 15
PACKAGE_MARKERS = ("site-packages/", "dist-packages/")
WAIT_LEAVES = frozenset(
    {
        "EpollSelector.select",
        "_PollLikeSelector.select",
        "_worker",
        "Thread.run",
        "Condition.wait",
        "Event.wait",
        "Thread._wait_for_tstate_lock",
    }
)
"""Innermost frames of a thread that waits (for I/O or work) rather than computes."""
ENTRY_FRAMES = frozenset({"<module>", "main", "_serve", "run_service"})
"""The project's frames under which a whole service runs: left out of the inclusive list."""


def py_spy() -> str | None:
    """The py-spy program beside this interpreter, else on PATH; None when it is not installed."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.exists():
        return str(beside)
    return shutil.which("py-spy")


@dataclass(frozen=True)
class Recording:
    """One service's py-spy run."""

    name: str
    pid: int
    path: Path
    process: subprocess.Popen[bytes]


@contextlib.contextmanager
def recording(
    program: str, processes: Mapping[str, int], folder: Path, rate: int
) -> Iterator[list[Recording]]:
    """py-spy on each of ``processes`` (name -> pid) while the block runs; stopped with SIGINT (py-spy
    then writes its file) when it ends. Each file is ``folder/<name>.txt``."""
    folder.mkdir(parents=True, exist_ok=True)
    runs = []
    for name, pid in processes.items():
        path = folder / f"{name}.txt"
        command = [program, "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw"]
        command += ["--nonblocking", "--nolineno", "--full-filenames", "--output", str(path)]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)  # fmt: skip
        runs.append(Recording(name, pid, path, process))
    try:
        yield runs
    finally:
        for run in runs:
            if run.process.poll() is None:
                run.process.send_signal(signal.SIGINT)
        for run in runs:
            try:
                run.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                run.process.kill()
                run.process.wait()


def _short(frame: str, package_dir: str) -> str:
    """``function (path)`` with the path from the package or the standard library onwards."""
    function, _, where = frame.partition(" (")
    path = where.rstrip(")")
    if path.startswith(package_dir):
        path = "hindsight/" + path[len(package_dir) :].lstrip("/")
    else:
        for marker in PACKAGE_MARKERS:
            if marker in path:
                path = path.split(marker, 1)[1]
                break
        else:
            if "/lib/python3" in path:
                path = path.split("/lib/python3", 1)[1].split("/", 1)[-1]
    return f"{function} ({path})" if path else function


def read_collapsed(path: Path) -> list[tuple[list[str], int]]:
    """The stacks of a raw py-spy file (root first) and each one's sample count."""
    stacks: list[tuple[list[str], int]] = []
    if not path.exists():
        return stacks
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append((stack.split(";"), int(count)))
    return stacks


def summarise(
    path: Path, rate: int, operations: int, cpu_ms_per_op: float | None = None, top: int = TOP
) -> dict[str, Any]:
    """One service's profile: its top functions by CPU ms per operation, self and inclusive.

    Samples outside :data:`WAIT_LEAVES` share out ``cpu_ms_per_op`` (the meter's figure); without it, each
    counts ``1 / rate`` seconds.
    """
    import hindsight

    package_dir = str(Path(hindsight.__file__).resolve().parent)
    samples = waiting = 0
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    for stack, count in read_collapsed(path):
        frames = [_short(frame, package_dir) for frame in stack]
        samples += count
        if frames[-1].partition(" (")[0] in WAIT_LEAVES:
            waiting += count
            continue
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for frame in set(frames):
            if "(hindsight/" in frame and frame.partition(" (")[0] not in ENTRY_FRAMES:
                inclusive[frame] = inclusive.get(frame, 0) + count
    working = samples - waiting
    sampled_ms = working * 1000.0 / rate / max(1, operations)
    per_sample = (cpu_ms_per_op if cpu_ms_per_op is not None else sampled_ms) / max(1, working)

    def ranked(counts: dict[str, int]) -> list[list[Any]]:
        best = sorted(counts.items(), key=lambda item: -item[1])[:top]
        return [[name, round(count * per_sample, 2)] for name, count in best]

    return {
        "samples": samples,
        "waiting_samples": waiting,
        "sampled_cpu_ms_per_op": round(sampled_ms, 2),
        "cpu_ms_per_op": round(cpu_ms_per_op if cpu_ms_per_op is not None else sampled_ms, 2),
        "self": ranked(own),
        "inclusive": ranked(inclusive),
    }


def markdown(profiles: Mapping[str, dict[str, Any]], top: int = 8) -> str:
    """Each service's top functions by self CPU, as lines for the terminal."""
    lines = []
    for name, profile in profiles.items():
        lines.append(
            f"{name}: {profile['cpu_ms_per_op']} ms CPU per recall ({profile['sampled_cpu_ms_per_op']} "
            f"sampled, {profile['waiting_samples']} of {profile['samples']} samples waiting)"
        )
        for function, ms in profile["self"][:top]:
            lines.append(f"  {ms:>7.2f}  {function}")
    return "\n".join(lines)
