"""pprof profiles: decode, validate, split by sample type and encode, column-wise with numpy."""

from flamewatch.pprof.decode import decode, decompress, decompressed_size_hint
from flamewatch.pprof.encode import encode
from flamewatch.pprof.errors import DecodeError, InvalidProfile, InvalidProfileName, LimitExceeded, PprofError
from flamewatch.pprof.model import Functions, Locations, Mappings, Profile, Samples
from flamewatch.pprof.naming import hint_from_file_name, profile_name
from flamewatch.pprof.profile_types import ProfileType, TypedProfile, split
from flamewatch.pprof.validate import ProfileLimits, validate

__all__ = [
    "DecodeError", "Functions", "InvalidProfile", "InvalidProfileName", "LimitExceeded", "Locations", "Mappings",
    "PprofError", "Profile", "ProfileLimits", "ProfileType", "Samples", "TypedProfile", "decode", "decompress",
    "decompressed_size_hint", "encode", "hint_from_file_name", "profile_name", "split", "validate",
]
