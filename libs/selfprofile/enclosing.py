"""The function a line of Python source belongs to, for frames that carry only a file name and a line.

tracemalloc records (file, line) per frame, no function. Parsing each file with `ast` would find the
function around a line, but a heap profile sees every file the process imported (~470 files, 270k
lines for a service with FastAPI and numpy), and with tracemalloc tracing the parser's own
allocations that took 18 s (compiling instead: 13 s). The process already holds the answer: the code
object of every function alive knows its file, its `co_qualname`, its first line and, through
`co_lines()`, its last, and holds the code of the functions defined in it. `FunctionIndex` collects
the code of the function objects the garbage collector tracks and arranges each file's as a tree by
nesting; a line belongs to the innermost function whose first..last lines hold it. Only the functions
on the way to a line have their last line computed, once per process (the first heap profile of a
traced service ~1 s, later ones reuse it).

Names match the CPU profiler's, `module.qualname`. Lambdas, comprehensions and generator
expressions share lines with the code around them (the caller's frame sits on the same line), so
their lines belong to the named function they are written in. A line outside every function is
module or class-body code: `module.<module>`. A file the process has no module or function from
gives `file:line`.
"""

from __future__ import annotations

import bisect
import gc
import sys
from collections import defaultdict
from types import CodeType, FunctionType

_Function = tuple[str, int]  # (qualified name, first line)


class FunctionIndex:
    """The functions alive now, collected in one pass over the garbage collector's objects."""

    def __init__(self) -> None:
        self._modules = _module_files()
        self._codes: dict[str, dict[CodeType, str]] = defaultdict(dict)  # file -> named code -> module
        seen: set[CodeType] = set()
        for obj in gc.get_objects():
            if type(obj) is FunctionType:
                code = obj.__code__
                self._add(code, obj.__module__ or self._modules.get(code.co_filename, ""), seen)

    def function_at(self, filename: str, lineno: int) -> _Function:
        """(name, first line) of the function holding `lineno` of `filename`."""
        codes = self._codes.get(filename, {})
        functions = _file_functions(filename, codes)
        named = functions.names.get(lineno)
        if named is None:
            named = functions.names[lineno] = self._name(filename, lineno, codes, functions.innermost(lineno))
        return named

    def _name(self, filename: str, lineno: int, codes: dict[CodeType, str], code: CodeType | None) -> _Function:
        if code is not None:
            return f"{codes[code]}.{code.co_qualname}", code.co_firstlineno
        module = self._modules.get(filename) or next(iter(codes.values()), None)
        return (f"{module}.<module>", 1) if module else (f"{filename}:{lineno}", 0)

    def _add(self, code: CodeType, module: str, seen: set[CodeType]) -> None:
        pending = [code]
        while pending:
            code = pending.pop()
            if code not in seen:
                seen.add(code)
                if not code.co_name.startswith("<"):  # not a lambda, comprehension or module code
                    self._codes[code.co_filename][code] = module
                pending += [c for c in code.co_consts if isinstance(c, CodeType)]


class _FileFunctions:
    """One file's named functions as a tree by nesting, each level sorted by first line."""

    def __init__(self, codes: dict[CodeType, str]) -> None:
        children = {code: [c for c in code.co_consts if isinstance(c, CodeType) and c in codes] for code in codes}
        nested = {c for inner in children.values() for c in inner}
        self.version = len(codes)
        self._top = _Level([code for code in codes if code not in nested])
        self._children = {code: _Level(inner) for code, inner in children.items() if inner}
        self._last_line: dict[CodeType, int] = {}
        self.names: dict[int, _Function] = {}  # line -> its function, as named when first asked

    def innermost(self, lineno: int) -> CodeType | None:
        found, level = None, self._top
        while level is not None:
            code = level.last_starting_by(lineno)
            if code is None or lineno > self._last(code):
                break
            found, level = code, self._children.get(code)
        return found

    def _last(self, code: CodeType) -> int:
        last = self._last_line.get(code)
        if last is None:
            lines = [line for _, _, line in code.co_lines() if line is not None]
            last = self._last_line[code] = max(lines, default=code.co_firstlineno)
        return last


class _Level:
    def __init__(self, codes: list[CodeType]) -> None:
        self._codes = sorted(codes, key=lambda c: c.co_firstlineno)
        self._starts = [c.co_firstlineno for c in self._codes]

    def last_starting_by(self, lineno: int) -> CodeType | None:
        i = bisect.bisect_right(self._starts, lineno)
        return self._codes[i - 1] if i else None


# file name -> its functions, kept while the number of its named functions alive stays the same
_files: dict[str, _FileFunctions] = {}


def _file_functions(filename: str, codes: dict[CodeType, str]) -> _FileFunctions:
    functions = _files.get(filename)
    if functions is None or functions.version != len(codes):
        functions = _files[filename] = _FileFunctions(codes)
    return functions


def _module_files() -> dict[str, str]:
    """File name -> module name, for the modules imported now."""
    names: dict[str, str] = {}
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if isinstance(filename, str):
            names.setdefault(filename, name)
    return names
