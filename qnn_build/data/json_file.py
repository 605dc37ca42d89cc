"""A JSON object read from a file a user names (a step's --config, an encodings file), with its
problems as one line: not found, where the JSON breaks, or not an object."""

import json
from pathlib import Path

from ..errors import QnnBuildError, missing_file


def read_json_object(path, what: str, expected: str = "a JSON object") -> dict:
    path = Path(path)
    try:
        value = json.loads(path.read_text())
    except (FileNotFoundError, IsADirectoryError):
        raise missing_file(path, what) from None
    except json.JSONDecodeError as e:
        raise QnnBuildError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
    if not isinstance(value, dict):
        raise QnnBuildError(f"{path}: expected {expected}")
    return value
