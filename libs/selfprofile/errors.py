"""Errors of the self-profiling endpoints.

    SelfProfileError (ValueError)    a profile of this process cannot be taken as asked
    └── ProfilerBusy                 another CPU profile is running in this process
    HeapProfilingDisabled (NotFoundError)
                                     heap tracking (tracemalloc) is off in this process

SelfProfileErrors are ValueErrors, so the HTTP app answers them with 400 and the message as it is:
the request is well-formed but conflicts with the process's state; the error table has no 409
entry, and a client needs the message more than the status. A process without heap tracking has
no heap profile to give, as Go's net/http/pprof has none for a profile it does not know: 404, with
the message saying how to turn it on.
"""

from flamewatch.rpc.errors import NotFoundError


class SelfProfileError(ValueError):
    """A profile of this process cannot be taken as asked."""


class ProfilerBusy(SelfProfileError):
    """Another CPU profile is running in this process; only one runs at a time."""


class HeapProfilingDisabled(NotFoundError):
    """Heap profiles need tracemalloc, which is not tracing in this process."""
