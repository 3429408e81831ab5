"""Building pprof profiles in tests: the index of a string in a profile's string table."""

from collections.abc import Callable

from flamewatch.api.perftools.profiles import profile_pb2 as pb


def interner(profile: pb.Profile) -> Callable[[str], int]:
    """A function giving the index of a string in `profile.string_table`, appending it the first time."""
    index = {s: i for i, s in enumerate(profile.string_table)}

    def string(s: str) -> int:
        if s not in index:
            index[s] = len(profile.string_table)
            profile.string_table.append(s)
        return index[s]

    return string
