"""An object made and called in a child process of its own, over a pipe: how `bench --peers` and
`serve-bench --peers` run llama.cpp's server (peers.RemoteServer).

Why not in specviz's process: a llama.cpp server loaded there slowed specviz's own turns while it sat idle. Measured
2026-12-06 on the AMD EPYC (2 cores, avx2 avx512f avx512_bf16 avx512_vnni), the packaged target's one-token step on
gguf-int4, medians of 15 steps, three each: 78–92 ms alone; 95–114 ms with one llama.cpp server loaded in the same
process and idle (no CPU time used over 5 s), 113–135 ms after it had served one request; 84–88 ms with the same
server idle in another process. The cause inside the process is not found (affinity and thread counts were as
before; two OpenMP runtimes share it); a process apart removes it, so specviz's turns are timed as a user runs it.

    child = InChild(LlamaServer, files, False, 1, context, 2)   # made there, from the class and its arguments
    completion = child.call("complete", ids, 48)               # its method's result, sent back
    child.close()                                              # or at this process's exit: the child is a daemon

Whatever is timed is timed in the child, beside the object's work: the pipe costs nothing measured.
"""

from __future__ import annotations

import builtins
import multiprocessing
import threading


class InChild:
    """`make(*args)` in a spawned child process (nothing of torch's state forked), its methods called one at a time;
    an error there is raised here with its message, as its own type where that is one of Python's (ValueError,
    OSError, …), else as a RuntimeError naming it."""

    def __init__(self, make, *args, name: str = "child"):
        spawn = multiprocessing.get_context("spawn")
        self._pipe, theirs = spawn.Pipe()
        self._process = spawn.Process(target=_serve, args=(theirs, make, args), daemon=True, name=name)
        self._process.start()
        theirs.close()
        self._lock = threading.Lock()
        self._answer()  # made (or its error raised here)

    def call(self, method: str, *args):
        with self._lock:
            if not self._process.is_alive():
                raise self._ended()
            self._pipe.send((method, args))
            return self._answer()

    @property
    def alive(self) -> bool:
        return self._process.is_alive()

    def close(self) -> None:
        if self._process.is_alive():
            with self._lock:
                self._pipe.send(None)
            self._process.join(30)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        self._pipe.close()

    def _ended(self) -> RuntimeError:
        return RuntimeError(f"the {self._process.name} process ended (exit code {self._process.exitcode})")

    def _answer(self):
        try:
            ok, value = self._pipe.recv()
        except EOFError:
            self._process.join(5)
            raise self._ended() from None
        if not ok:
            raise _error(*value)
        return value


def _serve(pipe, make, args) -> None:
    """The child: make the object, say so, then answer calls until None or the pipe closes."""
    try:
        made = make(*args)
    except Exception as e:
        pipe.send((False, _said(e)))
        return
    pipe.send((True, None))
    while True:
        try:
            asked = pipe.recv()
        except EOFError:
            return
        if asked is None:
            return
        method, args = asked
        try:
            pipe.send((True, getattr(made, method)(*args)))
        except Exception as e:
            pipe.send((False, _said(e)))


def _said(e: Exception) -> tuple[str, str]:
    """An error as it crosses the pipe: its type's name and its message (plain strings, whatever it held)."""
    return type(e).__name__, str(e)


def _error(name: str, message: str) -> Exception:
    """The error to raise here for one said there (_said)."""
    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception):
        return kind(message)
    return RuntimeError(f"{name}: {message}")
