"""qnn-net-run's input files: input lists and raw tensors.

An input list has one line per inference; each line holds `name:=path` entries separated by spaces
(a bare path is allowed for a single-input model). Lines starting with `#` are comments. Raw files
are little-endian, in the input's own dtype and the model's own layout. Outputs are written as
float32 to OUT/Result_K/<file-safe output name>.raw (runtime/netrun.py).
"""

import re
from pathlib import Path

import numpy as np

from ..errors import QnnBuildError, missing_file
from .model_io import IOInfo


_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def safe_name(name: str) -> str:
    """The file name for an output: every character but letters, digits, `_`, `.`, `-` becomes `_`."""
    return _UNSAFE.sub("_", name)


def parse_input_list(path, inputs: list[IOInfo]) -> list[dict[str, Path]]:
    """Each inference's input name -> raw file path."""
    path = Path(path)
    if not path.is_file():
        raise missing_file(path, "input list")
    names = [i.name for i in inputs]
    runs = []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        entries: dict[str, Path] = {}
        for token in line.split():
            if ":=" in token:
                name, file = token.split(":=", 1)
            elif len(names) == 1:
                name, file = names[0], token
            else:
                raise QnnBuildError(f"{path}:{lineno}: '{token}' has no 'name:=' but the model has "
                                    f"{len(names)} inputs ({', '.join(names)})")
            if name not in names:
                raise QnnBuildError(f"{path}:{lineno}: '{name}' is not an input of the model "
                                    f"(inputs: {', '.join(names)})")
            entries[name] = _resolve(file, path)
        missing = [n for n in names if n not in entries]
        if missing:
            raise QnnBuildError(f"{path}:{lineno}: missing input '{missing[0]}'")
        runs.append(entries)
    if not runs:
        raise QnnBuildError(f"{path}: the input list has no inferences")
    return runs


def _resolve(file: str, list_path: Path) -> Path:
    """As qnn-net-run: relative to the working directory; failing that, to the list's directory."""
    p = Path(file)
    if p.is_absolute() or p.exists():
        return p
    return list_path.parent / p


def read_raw(path: Path, info: IOInfo, where: str) -> np.ndarray:
    if not path.is_file():
        raise QnnBuildError(f"{where}: raw file {path} not found (input '{info.name}')")
    data = path.read_bytes()
    expected = int(np.prod(info.shape)) * info.dtype.itemsize
    if len(data) != expected:
        raise QnnBuildError(f"{where}: {path} has {len(data)} bytes; input '{info.name}' needs {expected} "
                            f"({info.dtype} {list(info.shape)})")
    return np.frombuffer(data, info.dtype.newbyteorder("<")).reshape(info.shape)
