"""Checks on the files a spec points to: they exist, have a usable kind, and hold the right arrays."""

import zipfile
from pathlib import Path

from .yaml_source import YamlSource, display_path


def existing_file(yaml: YamlSource, key: tuple, suffixes=()) -> Path:
    """The file named at `key`, relative to the spec file; a SpecError if it is missing or of the wrong kind."""
    value = yaml.data
    for part in key:
        value = value[part]
    path = Path(yaml.path.parent, value).absolute()
    if suffixes and path.suffix.lower() not in suffixes:
        raise yaml.error(key, f"expected a {' or '.join(suffixes)} file, got '{value}'")
    if path.is_dir():
        raise yaml.error(key, f"{display_path(path)} is a directory, not a file")
    if not path.is_file():
        raise yaml.error(key, f"file not found: {display_path(path)} (paths are relative to the spec file)")
    return path


def npz_keys(path: Path) -> list[str] | None:
    """The array names in an .npz (read from the zip directory only: cheap); None if it is not an .npz."""
    try:
        with zipfile.ZipFile(path) as archive:
            return [name[: -len(".npy")] for name in archive.namelist() if name.endswith(".npy")]
    except (zipfile.BadZipFile, OSError):
        return None


def check_npz_has(yaml: YamlSource, key: tuple, path: Path, wanted: list[str], what: str) -> None:
    """`path` (given at `key`) must be an .npz holding every name in `wanted` (`what` names their role)."""
    keys = npz_keys(path)
    if keys is None:
        raise yaml.error(key, f"{display_path(path)} is not a valid .npz archive")
    missing = [name for name in wanted if name not in keys]
    if missing:
        raise yaml.error(key, f"{display_path(path)} has no array for {what} '{missing[0]}' "
                              f"(it holds: {', '.join(keys) or 'nothing'})")
