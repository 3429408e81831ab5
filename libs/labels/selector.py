"""Label matchers and the query language that selects series: `<profile type id>{<matchers>}`.

Owns the grammar, its tokenizer and parser, matcher semantics and the canonical text form:

    query      = profile_type [ "{" matchers "}" ] | "{" matchers "}"
    matchers   = [ matcher { "," matcher } [ "," ] ]
    matcher    = label_name ( "=" | "!=" | "=~" | "!~" ) string
    string     = "..." | '...' (Go escapes) | `...` (raw)

Whitespace may surround any token. Error positions are 0-based character offsets into the text.
Matchers follow Prometheus: regexes are RE2 (linear time), anchored at both ends, and `.` matches newlines; a label a
series does not have counts as the empty string, so `pod=""` selects series without `pod`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np
import re2

from flamewatch.labels.errors import SelectorError
from flamewatch.labels.labelset import LABEL_NAME_PATTERN, is_valid_label_name

OPERATORS = ("=", "!=", "=~", "!~")
_REGEX_OPERATORS = ("=~", "!~")
_PROFILE_TYPE_PART_RE = re.compile(r"[A-Za-z0-9_.-]+")
_PROFILE_TYPE_RULE = (
    "must be 5 non-empty colon-separated parts of [A-Za-z0-9_.-] "
    "(name:sample_type:sample_unit:period_type:period_unit)"
)


@dataclass(frozen=True)
class Matcher:
    """One `name op "value"` condition on a series' labels."""

    name: str
    op: str
    value: str
    _regex: re2._Regexp | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not is_valid_label_name(self.name):
            raise SelectorError(f'invalid label name "{self.name}": must match {LABEL_NAME_PATTERN}')
        if self.op not in OPERATORS:
            raise SelectorError(
                f'label "{self.name}": unknown operator "{self.op}", expected one of =, !=, =~, !~'
            )
        if self.op in _REGEX_OPERATORS:
            object.__setattr__(self, "_regex", _compile(self.name, self.value))

    def matches(self, value: str | None) -> bool:
        """Whether a series whose label has `value` (None: the series lacks it) is selected."""
        actual = "" if value is None else value
        if self._regex is None:
            return (actual == self.value) == (self.op == "=")
        return (self._regex.fullmatch(actual) is not None) == (self.op == "=~")

    def matches_many(self, values: np.ndarray) -> np.ndarray:
        """`matches` over an object array of strings ("" where the label is absent), as a bool array.

        Equality compares the whole array at once; a regex is run once per distinct value."""
        values = np.asarray(values, dtype=object)
        if self._regex is None:
            return (values == self.value) == (self.op == "=") if len(values) else np.zeros(0, bool)
        distinct, inverse = np.unique(values.astype(str), return_inverse=True)
        hit = np.array([self._regex.fullmatch(v) is not None for v in distinct.tolist()], bool)
        return (hit[inverse.reshape(-1)] if len(values) else np.zeros(0, bool)) == (self.op == "=~")

    def __str__(self) -> str:
        return f"{self.name}{self.op}{quote(self.value)}"


@dataclass(frozen=True)
class Query:
    """A profile type (None: any) and the matchers a series must all satisfy."""

    profile_type: str | None
    matchers: tuple[Matcher, ...] = ()

    def __post_init__(self) -> None:
        # A list would make the frozen instance unhashable; accept any iterable for convenience.
        object.__setattr__(self, "matchers", tuple(self.matchers))
        if self.profile_type is not None and not is_valid_profile_type(self.profile_type):
            raise SelectorError(_profile_type_problem(self.profile_type))

    def __str__(self) -> str:
        """The canonical text: parse_query(str(q)) == q."""
        if self.profile_type is not None and not self.matchers:
            return self.profile_type
        return (self.profile_type or "") + format_matchers(self.matchers)


def is_valid_profile_type(text: str) -> bool:
    """Whether `text` has the shape of a profile type id such as `memory:inuse_space:bytes:space:bytes`."""
    parts = text.split(":")
    return len(parts) == 5 and all(_PROFILE_TYPE_PART_RE.fullmatch(part) for part in parts)


def _profile_type_problem(text: str) -> str:
    return f'invalid profile type id "{text}": {_PROFILE_TYPE_RULE}'


def format_matchers(matchers: tuple[Matcher, ...]) -> str:
    """Render matchers as `{a="1",b=~"x.*"}`, in the given order."""
    return "{" + ",".join(str(matcher) for matcher in matchers) + "}"


def parse_query(text: str) -> Query:
    """Parse `<profile type id>`, `<profile type id>{...}` or `{...}`; raise SelectorError if invalid."""
    return _Parser(text).query()


def parse_selector(text: str) -> tuple[Matcher, ...]:
    """Parse a `{...}` selector such as a `match[]` parameter; raise SelectorError if invalid."""
    return _Parser(text).selector()


def _options() -> re2.Options:
    options = re2.Options()
    options.dot_nl = True  # Prometheus compiles matchers as ^(?s:...)$: `.` matches newlines too
    options.log_errors = False  # a client's bad pattern is answered, not logged by the library
    return options


_RE2_OPTIONS = _options()


@functools.lru_cache(maxsize=1024)
def _compile_pattern(pattern: str) -> re2._Regexp:
    # RE2, as Prometheus' Go regexp: matching takes time linear in the value whatever the pattern, where
    # a backtracking engine (Python's re, Postgres' ~) takes exponential time on patterns such as
    # (a|a)*c, so one query could hold a worker for minutes. RE2 refuses what needs backtracking
    # (backreferences, lookaround), as Prometheus does.
    return re2.compile(pattern, _RE2_OPTIONS)


def _compile(name: str, pattern: str) -> re2._Regexp:
    try:
        return _compile_pattern(pattern)
    except re2.error as exc:
        raise SelectorError(
            f'label "{name}": invalid regular expression {quote(pattern)}: {_re2_message(exc)}'
        ) from exc


def _re2_message(exc: re2.error) -> str:
    reason = exc.args[0] if exc.args else "cannot be compiled"
    return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)


# ---- quoting ---------------------------------------------------------------------------------------

_ESCAPE_OUT = {
    "\\": "\\\\",
    '"': '\\"',
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}
_ESCAPE_IN = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    '"': '"',
    "'": "'",
}
_HEX_ESCAPE_DIGITS = {"x": 2, "u": 4, "U": 8}


def quote(value: str) -> str:
    """Double-quote `value` with Go escapes, so the selector parser reads it back unchanged."""
    return '"' + "".join(_quote_char(char) for char in value) + '"'


def _quote_char(char: str) -> str:
    if char in _ESCAPE_OUT:
        return _ESCAPE_OUT[char]
    if char.isprintable():
        return char
    code = ord(char)
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


# ---- tokenizer -------------------------------------------------------------------------------------

_WORD_RE = re.compile(r"[A-Za-z0-9_.:-]+")
_PUNCTUATION = "{},"


@dataclass(frozen=True)
class _Token:
    kind: str  # "word", "op", "string", "{", "}", ",", "end"
    text: str  # the word or operator as written; the decoded value for strings
    pos: int


def _error(pos: int, message: str) -> SelectorError:
    return SelectorError(f"invalid selector at position {pos}: {message}")


class _Lexer:
    """Produces tokens on demand, so an error is reported at the first place the text goes wrong."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0

    def next(self) -> _Token:
        self._skip_space()
        if self._pos >= len(self._text):
            return _Token("end", "", self._pos)
        char = self._text[self._pos]
        if char in _PUNCTUATION:
            self._pos += 1
            return _Token(char, char, self._pos - 1)
        if char in "=!":
            return self._operator()
        if char in "\"'`":
            return self._string(char)
        return self._word()

    def _skip_space(self) -> None:
        while self._pos < len(self._text) and self._text[self._pos].isspace():
            self._pos += 1

    def _operator(self) -> _Token:
        start = self._pos
        for op in ("=~", "!=", "!~", "="):
            if self._text.startswith(op, start):
                self._pos += len(op)
                return _Token("op", op, start)
        raise _error(start, "expected '!=' or '!~'")

    def _word(self) -> _Token:
        match = _WORD_RE.match(self._text, self._pos)
        if match is None:
            raise _error(self._pos, f"unexpected character '{self._text[self._pos]}'")
        self._pos = match.end()
        return _Token("word", match.group(), match.start())

    def _string(self, quote_char: str) -> _Token:
        start = self._pos
        self._pos += 1
        value = self._raw_string(start) if quote_char == "`" else self._quoted_string(start, quote_char)
        return _Token("string", value, start)

    def _raw_string(self, start: int) -> str:
        end = self._text.find("`", self._pos)
        if end < 0:
            raise _error(start, "unterminated string")
        value, self._pos = self._text[self._pos : end], end + 1
        return value

    def _quoted_string(self, start: int, quote_char: str) -> str:
        # Escapes decode to bytes (Go's \xHH and \ooo are bytes), so collect bytes and decode once.
        out = bytearray()
        while (char := self._take_char(start)) != quote_char:
            out += self._escape(start) if char == "\\" else char.encode("utf-8", "surrogatepass")
        try:
            return out.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _error(start, "string is not valid UTF-8") from exc

    def _take_char(self, start: int) -> str:
        if self._pos >= len(self._text):
            raise _error(start, "unterminated string")
        char = self._text[self._pos]
        if char == "\n":
            raise _error(self._pos, "newline in string")
        self._pos += 1
        return char

    def _escape(self, string_start: int) -> bytes:
        start = self._pos - 1
        char = self._take_char(string_start)
        if char in _ESCAPE_IN:
            return _ESCAPE_IN[char].encode()
        if char in _HEX_ESCAPE_DIGITS:
            return self._hex_escape(start, char)
        if char in "01234567":
            return self._octal_escape(start)
        raise _error(start, f"unknown escape sequence '\\{char}'")

    def _hex_escape(self, start: int, kind: str) -> bytes:
        digits = self._text[self._pos : self._pos + _HEX_ESCAPE_DIGITS[kind]]
        if len(digits) != _HEX_ESCAPE_DIGITS[kind] or not _is_hex(digits):
            raise _error(start, f"escape '\\{kind}' needs {_HEX_ESCAPE_DIGITS[kind]} hexadecimal digits")
        self._pos += len(digits)
        code = int(digits, 16)
        if kind == "x":
            return bytes([code])
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise _error(start, f"escape '\\{kind}{digits}' is not a valid Unicode code point")
        return chr(code).encode("utf-8")

    def _octal_escape(self, start: int) -> bytes:
        digits = self._text[self._pos - 1 : self._pos + 2]
        if len(digits) != 3 or any(d not in "01234567" for d in digits) or int(digits, 8) > 0xFF:
            raise _error(start, "octal escape needs 3 octal digits with a value up to \\377")
        self._pos += 2
        return bytes([int(digits, 8)])


def _is_hex(digits: str) -> bool:
    return all(d in "0123456789abcdefABCDEF" for d in digits)


# ---- parser ----------------------------------------------------------------------------------------


class _Parser:
    """Recursive descent over the tokens, one token of lookahead."""

    def __init__(self, text: str) -> None:
        self._lexer = _Lexer(text)
        self._token = self._lexer.next()

    def query(self) -> Query:
        if self._token.kind == "{":
            return Query(None, self._braces_then_end())
        profile_type = self._expect("word", "expected a profile type id or '{'")
        if not is_valid_profile_type(profile_type.text):
            raise _error(profile_type.pos, _profile_type_problem(profile_type.text))
        if self._token.kind == "end":
            return Query(profile_type.text)
        if self._token.kind != "{":
            raise _error(self._token.pos, "expected '{' or end of input after the profile type id")
        return Query(profile_type.text, self._braces_then_end())

    def selector(self) -> tuple[Matcher, ...]:
        if self._token.kind != "{":
            raise _error(self._token.pos, "expected '{'")
        return self._braces_then_end()

    def _braces_then_end(self) -> tuple[Matcher, ...]:
        matchers = self._braces()
        self._expect("end", "expected end of input after '}'")
        return matchers

    def _braces(self) -> tuple[Matcher, ...]:
        self._advance()  # the caller has seen "{"
        matchers: list[Matcher] = []
        while self._token.kind != "}":
            matchers.append(self._matcher())
            if self._token.kind != "}":
                self._expect(",", "expected ',' or '}' after a matcher")
        self._advance()
        return tuple(matchers)

    def _matcher(self) -> Matcher:
        name = self._expect("word", "expected a label name or '}'")
        if not is_valid_label_name(name.text):
            raise _error(name.pos, f'invalid label name "{name.text}": must match {LABEL_NAME_PATTERN}')
        op = self._expect("op", f"expected '=', '!=', '=~' or '!~' after label name \"{name.text}\"")
        value = self._expect("string", f"expected a quoted string after '{op.text}'")
        try:
            return Matcher(name.text, op.text, value.text)
        except SelectorError as exc:  # a bad regex: point at it
            raise _error(value.pos, str(exc)) from exc

    def _expect(self, kind: str, message: str) -> _Token:
        if self._token.kind != kind:
            raise _error(self._token.pos, message)
        return self._advance()

    def _advance(self) -> _Token:
        token = self._token
        if token.kind != "end":
            self._token = self._lexer.next()
        return token
