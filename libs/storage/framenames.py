"""What a frame is called on screen: its function's name, or for an unsymbolized frame its mapping's
file and the address within it; with its file and line for line granularity.

The functions take a block's decoded symbols (`BlockReader.frames`, `.functions`, `.mappings` and
`.strings`: one row per frame, function, mapping and string) and answer one value per frame.
"""

from __future__ import annotations

import numpy as np


def frame_names(strings: np.ndarray, frames: dict[str, np.ndarray], functions: dict[str, np.ndarray],
                mappings: dict[str, np.ndarray]) -> np.ndarray:
    """Function name of each frame. An unsymbolized frame is named after its mapping's file and its
    address within that file (address - memory start + file offset), `[libc.so.6] 0x4f2a0`, so it stays
    the same across processes that load the file at different addresses; without a mapping that holds
    it, it is its address."""
    function = frames["function"]
    names = np.empty(len(function), object)
    known = function >= 0
    names[known] = strings[functions["name"][function[known]]]
    unknown = np.flatnonzero(~known)
    address = frames["address"][unknown].astype(np.uint64)
    mapping = frames["mapping"][unknown]
    names[unknown] = np.char.add("0x", np.char.mod("%x", address))
    mapped = mapping >= 0
    inside = np.zeros(len(mapped), bool)
    inside[mapped] = ((mappings["memory_start"][mapping[mapped]] <= address[mapped])
                      & (address[mapped] < mappings["memory_limit"][mapping[mapped]]))
    mapped = inside  # an address outside its mapping's range is shown as it is
    if mapped.any():
        m = mapping[mapped]
        offset = address[mapped] - mappings["memory_start"][m] + mappings["file_offset"][m]
        prefix = _mapping_prefixes(strings, mappings)[m]
        names[unknown[mapped]] = np.char.add(prefix.astype(str), np.char.mod("%x", offset))
    return names


def _mapping_prefixes(strings: np.ndarray, mappings: dict[str, np.ndarray]) -> np.ndarray:
    """`[file base name] 0x` per mapping (a name already in brackets, like [vdso], kept as it is)."""
    files = strings[mappings["filename"]].astype(str).tolist()
    bases = [f.rsplit("/", 1)[-1] for f in files]  # one step per mapping, not per frame
    return np.array([(b if b.startswith("[") else f"[{b}]") + " 0x" if b else "0x" for b in bases], object)


def frame_binaries(strings: np.ndarray, frames: dict[str, np.ndarray], mappings: dict[str, np.ndarray]) -> np.ndarray:
    """The file of each frame's mapping (the binary or library it was executed from, as the profile names
    it), "" for a frame without a mapping or whose mapping names no file."""
    mapping = frames["mapping"]
    files = strings[mappings["filename"]] if len(mappings["filename"]) else np.zeros(0, object)
    out = np.full(len(mapping), "", object)
    mapped = mapping >= 0
    out[mapped] = files[mapping[mapped]]
    return out


def frame_line_names(names: np.ndarray, strings: np.ndarray, frames: dict[str, np.ndarray],
                     functions: dict[str, np.ndarray]) -> np.ndarray:
    """Per frame, `function file:line` (the file's base name) for line granularity, given the frames'
    `names`; frames without a line keep their name."""
    names = names.copy()
    function = frames["function"]
    known = np.flatnonzero(function >= 0)
    if len(known):
        files = strings[functions["filename"][function[known]]].astype(str)
        base = np.array([f.rsplit("/", 1)[-1] for f in np.unique(files).tolist()], object)
        file_base = base[np.searchsorted(np.unique(files), files)]
        where = np.char.add(np.char.add(file_base.astype(str), ":"), frames["line"][known].astype(str))
        names[known] = np.char.add(np.char.add(names[known].astype(str), " "), where).astype(object)
    return names


def frame_table(names: np.ndarray, strings: np.ndarray, frames: dict[str, np.ndarray],
                functions: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per frame: function name (given as `names`), system name and file name strings, line, address."""
    function = frames["function"]
    safe = np.maximum(function, 0)

    def string_col(col: str) -> np.ndarray:
        idx = functions[col]
        out = strings[idx[safe]] if len(idx) else np.full(len(function), "", object)
        return np.where(function >= 0, out, "")
    return {
        "name": names,
        "system_name": string_col("system_name"),
        "filename": string_col("filename"),
        "line": frames["line"],
        "address": frames["address"],
    }
