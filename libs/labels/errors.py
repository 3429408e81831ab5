"""Errors raised by the label and selector code.

Every error is a ValueError, so a caller that only knows "the input was bad" can catch that; API
layers map LabelError to HTTP 400 / gRPC INVALID_ARGUMENT in one place.

    ValueError
    └── LabelError            anything wrong with labels or selectors
        ├── SelectorError     a selector or query that does not parse, or a matcher that cannot work
        └── InvalidLabelError a label set (or a CLI label argument) that breaks the rules or limits
"""

from __future__ import annotations


class LabelError(ValueError):
    """Base class for label and selector errors."""


class SelectorError(LabelError):
    """A selector or query text that does not parse, or a matcher with a bad operator or regex."""


class InvalidLabelError(LabelError):
    """A label set that breaks the naming rules or the configured limits."""
