"""Read a YAML file into plain data while remembering the line of every key and value.

Errors found later (by the schema or the semantic checks) name a key path such as
('test', 'thresholds', 'sqnr_db'); `YamlSource.line_of` maps that path back to a line in the file.
We compose the YAML node tree (which keeps marks) and build the data ourselves.
"""

import os
import re
from pathlib import Path

import yaml

from .spec_error import SpecError, format_key


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads `1e-4` as a float (YAML 1.1 insists on `1.0e-4`; users don't)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def display_path(path) -> str:
    """The path as the user should see it: relative to the working directory when inside it."""
    path = Path(path)
    if not path.is_absolute():
        return path.as_posix()
    try:
        relative = Path(os.path.relpath(path))
    except ValueError:  # another drive on Windows
        return str(path)
    return str(path) if relative.parts[:1] == ("..",) else relative.as_posix()


class YamlSource:
    """Data from one YAML file plus the line of each key path (1-based)."""

    def __init__(self, path):
        self.path = Path(path)
        self.display = display_path(path)
        self._key_lines: dict[tuple, int] = {}
        self._value_lines: dict[tuple, int] = {}
        self._constructor = _Loader("")  # only its constructor methods are used: scalars, merge keys
        self.data = self._load()

    # -- lines and errors ------------------------------------------------------------------------

    def line_of(self, path) -> int:
        """The line of the key (or list item) at `path`; its nearest existing parent when absent."""
        path = tuple(path)
        while True:
            if path in self._key_lines:
                return self._key_lines[path]
            if path in self._value_lines:
                return self._value_lines[path]
            if not path:
                return 1
            path = path[:-1]

    def has(self, path) -> bool:
        return tuple(path) in self._value_lines

    def error(self, path, message: str) -> SpecError:
        """A SpecError at `path` (a tuple of keys / indices); the caller raises it."""
        return SpecError(self.display, self.line_of(path), format_key(path), message)

    # -- parsing ---------------------------------------------------------------------------------

    def _load(self):
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SpecError(self.display, None, "", "file not found") from None
        except (OSError, UnicodeDecodeError) as err:
            raise SpecError(self.display, None, "", f"cannot read: {err}") from None
        try:
            node = yaml.compose(text, Loader=_Loader)
            if node is None:
                raise SpecError(self.display, 1, "", "the file is empty; expected a mapping of keys")
            return self._build(node, ())
        except yaml.MarkedYAMLError as err:
            mark = err.problem_mark or err.context_mark
            line = mark.line + 1 if mark else None
            problem = err.problem or err.context or "invalid YAML"
            if err.context and err.context_mark and mark and err.context_mark.line != mark.line:
                problem += f" ({err.context} started on line {err.context_mark.line + 1})"
            raise SpecError(self.display, line, "", f"YAML syntax error: {problem}") from None
        except yaml.YAMLError as err:
            raise SpecError(self.display, None, "", f"YAML syntax error: {err}") from None

    def _build(self, node, path):
        self._value_lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            self._constructor.flatten_mapping(node)  # applies `<<:` merge keys, as yaml.safe_load would
            data = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise SpecError(self.display, key_node.start_mark.line + 1, format_key(path),
                                    "a key must be a plain name, not a list or mapping")
                key = key_node.value  # the key's text as written: `0:` stays "0", `on:` stays "on"
                if key in data:
                    first = self._key_lines[path + (key,)]
                    raise SpecError(self.display, key_node.start_mark.line + 1, format_key(path + (key,)),
                                    f"duplicate key (first given on line {first})")
                self._key_lines[path + (key,)] = key_node.start_mark.line + 1
                data[key] = self._build(value_node, path + (key,))
            return data
        if isinstance(node, yaml.SequenceNode):
            return [self._build(item, path + (i,)) for i, item in enumerate(node.value)]
        return self._constructor.construct_object(node, deep=True)

