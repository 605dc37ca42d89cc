"""The Snapdragon SoCs the htp backend prepares context binaries for: configs/socs/<name>.yaml, each
with its chip (SC8380XP), QNN SoC id (soc_model) and HTP architecture (htp_arch)."""

import difflib

from .ep import HtpError


def all_socs() -> dict[str, dict]:
    from ..spec.configs import package_configs
    return package_configs().placements.get("socs", {})


def get_soc(name: str) -> dict:
    """The SoC called `name`; an unknown one is refused with the known names."""
    socs = all_socs()
    if name not in socs:
        close = difflib.get_close_matches(str(name), list(socs), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise HtpError(f"unknown SoC '{name}'{hint} (known: {', '.join(sorted(socs))}; see configs/socs/)")
    return socs[name]


def soc_of_chip(chip: str) -> str | None:
    """The configs/socs name of a chip (the part number a QNN context binary records), if any."""
    return next((name for name, soc in all_socs().items() if soc["chip"] == chip), None)
