"""pprof profiles: decode, validate, split by sample type and encode, column-wise with numpy."""

from flamewatch.pprof.decode import decode, decompress
from flamewatch.pprof.encode import encode
from flamewatch.pprof.errors import DecodeError, InvalidProfile, LimitExceeded, PprofError
from flamewatch.pprof.model import Functions, Locations, Mappings, Profile, Samples
from flamewatch.pprof.profile_types import ProfileType, TypedProfile, profile_name, split
from flamewatch.pprof.validate import ProfileLimits, validate

__all__ = [
    "DecodeError", "Functions", "InvalidProfile", "LimitExceeded", "Locations", "Mappings", "PprofError",
    "Profile", "ProfileLimits", "ProfileType", "Samples", "TypedProfile", "decode", "decompress", "encode",
    "profile_name", "split", "validate",
]
