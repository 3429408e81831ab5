"""What may name an object file to the symbolizer (`flamewatch.buildid`): the values that become object
keys and debuginfod URLs, with the exact message of each refusal."""

import pytest

from flamewatch.buildid import base_name, build_id, is_build_id, is_file_name

HEX_RULE = "expected 4 to 128 hex digits (an even number, as a GNU build-id note holds bytes), e.g. 2d0e1f1a9c3b8e7d"


@pytest.mark.parametrize(("given", "kept"), [
    ("00ff", "00ff"),
    ("2D0E1F1A9C3B8E7D", "2d0e1f1a9c3b8e7d"),  # as some tools print them
    ("ab" * 20, "ab" * 20),  # sha1, ld's default
    ("ab" * 64, "ab" * 64),
])
def test_build_ids_of_the_lengths_a_note_holds_are_kept_in_lower_case(given: str, kept: str):
    assert build_id(given) == kept
    assert is_build_id(given)


@pytest.mark.parametrize("given", [
    "../../x", "ab/cd", "abcd/../../etc", "", "ab", "abc", "ab" * 65, "abcd\n", "abcd ", " abcd", "abcg",
    "ab\x00cd", "０１２３",  # full-width digits: str.isdigit would take them
])
def test_anything_else_is_refused_with_the_rule(given: str):
    assert not is_build_id(given)
    with pytest.raises(ValueError) as refused:
        build_id(given)
    assert str(refused.value) == f"invalid build ID {shown(given)}: {HEX_RULE}"


def shown(value: str) -> str:
    """A value as a message quotes it: at most its first 80 characters, and then how long it is."""
    return repr(value) if len(value) <= 80 else repr(value[:80]) + f" (… {len(value)} characters)"


def test_a_long_value_is_shortened_in_the_message():
    with pytest.raises(ValueError) as refused:
        build_id("../" * 1000)
    assert str(refused.value) == f"invalid build ID {('../' * 1000)[:80]!r} (… 3000 characters): {HEX_RULE}"


@pytest.mark.parametrize(("given", "base"), [
    ("burn", "burn"),
    ("/usr/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6"),
    ("../../burn", "burn"),  # only the base name is ever used
    ("app.debug", "app.debug"),
    ("é" * 127, "é" * 127),  # 254 bytes
])
def test_a_file_name_gives_its_base_name(given: str, base: str):
    assert base_name(given) == base
    assert is_file_name(given)


@pytest.mark.parametrize(("given", "problem"), [
    ("", "it ends without a base name (a file, not a folder, e.g. /usr/lib/libc.so.6)"),
    ("/usr/lib/", "it ends without a base name (a file, not a folder, e.g. /usr/lib/libc.so.6)"),
    ("..", "its base name is . or .."),
    ("/tmp/.", "its base name is . or .."),
    ("a\\..\\b", "its base name holds a control character or a backslash"),
    ("a\x00b", "its base name holds a control character or a backslash"),
    ("line\nbreak", "its base name holds a control character or a backslash"),
    ("é" * 128, "its base name is longer than 255 bytes"),
])
def test_a_file_name_that_is_no_file_is_refused(given: str, problem: str):
    assert not is_file_name(given)
    with pytest.raises(ValueError) as refused:
        base_name(given)
    assert str(refused.value) == f"invalid file name {shown(given)}: {problem}"
