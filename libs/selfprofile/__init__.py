"""Profiles of this Python process in pprof: a sampling CPU profiler and tracemalloc heap profiles.

Every Flamewatch service mounts `router()` to serve `/debug/pprof/profile?seconds=N` and
`/debug/pprof/heap`, so Flamewatch can scrape itself like any other target.
"""

from flamewatch.selfprofile.cpu import profile_cpu
from flamewatch.selfprofile.errors import HeapProfilingDisabled, ProfilerBusy, SelfProfileError
from flamewatch.selfprofile.heap import profile_heap, start_heap_tracking
from flamewatch.selfprofile.routes import router

__all__ = ["HeapProfilingDisabled", "ProfilerBusy", "SelfProfileError", "profile_cpu", "profile_heap", "router",
           "start_heap_tracking"]
