"""Flamewatch: continuous profiling. Shared code lives here; services live in flamewatch.<service>."""
