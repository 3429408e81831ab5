"""Errors of the self-profiling endpoints.

    SelfProfileError (ValueError)    a profile of this process cannot be taken as asked
    ├── ProfilerBusy                 another CPU profile is running in this process
    └── HeapProfilingDisabled        heap tracking (tracemalloc) is not on

All are ValueErrors, so the HTTP app answers them with 400 and the message as it is. The request is
well-formed but conflicts with the process's state; the error table has no 409 entry, and a client
needs the message more than the status.
"""


class SelfProfileError(ValueError):
    """A profile of this process cannot be taken as asked."""


class ProfilerBusy(SelfProfileError):
    """Another CPU profile is running in this process; only one runs at a time."""


class HeapProfilingDisabled(SelfProfileError):
    """Heap profiles need tracemalloc, which is not tracing in this process."""
