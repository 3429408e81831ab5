"""The public surface of the packages other code builds on is pinned here."""

import flamewatch.pprof


def test_pprof_exports():
    assert sorted(flamewatch.pprof.__all__) == [
        "DecodeError", "Functions", "InvalidProfile", "InvalidProfileName", "LimitExceeded", "Locations",
        "Mappings", "PprofError", "Profile", "ProfileLimits", "ProfileType", "Samples", "TypedProfile", "decode",
        "decompress", "decompressed_size_hint", "encode", "hint_from_file_name", "profile_name", "split", "validate",
    ]
    for name in flamewatch.pprof.__all__:
        assert getattr(flamewatch.pprof, name) is not None
