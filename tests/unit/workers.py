"""Functions a worker process runs in tests (spawned workers import them by name)."""

import os
import signal


def killed_at_third(chunk):
    """A chunk's size, except that the worker given the chunk starting "3" is killed (as the
    kernel's out-of-memory killer would: SIGKILL, nothing runs after it)."""
    if chunk[0][0] == "3":
        os.kill(os.getpid(), signal.SIGKILL)
    return len(chunk[0])


def crashed_at_third(chunk):
    """As :func:`killed_at_third`, with the worker ending by a crash (SIGSEGV) instead."""
    if chunk[0][0] == "3":
        os.kill(os.getpid(), signal.SIGSEGV)
    return len(chunk[0])


def killed_on_start(*args):
    """A pool's initializer whose worker is killed as it starts (SIGKILL)."""
    os.kill(os.getpid(), signal.SIGKILL)
