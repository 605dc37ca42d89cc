"""onnxruntime-qnn: Qualcomm's QNN libraries (libQnnHtp.so: the HTP backend, on x86-64 the HTP in
emulation and offline graph preparation for a named SoC) behind onnxruntime's plugin execution
provider. Everything here talks to it; nothing else in qnn_build imports onnxruntime_qnn.

The package exists for Linux x86-64 and Windows on Arm, Python >= 3.11 (pyproject.toml installs it
there, with the onnxruntime it was tested with). Elsewhere `require()` says how to get it.
"""

from functools import lru_cache

from ..errors import QnnBuildError

EP_NAME = "QNNExecutionProvider"
INSTALL = "pip install 'onnxruntime-qnn==2.7.0' 'onnxruntime==1.32.0' (Linux x86-64 or Windows on Arm, Python >= 3.11)"


class HtpError(QnnBuildError):
    """A step of the htp backend failed; the message is one line naming the cause."""


@lru_cache(maxsize=None)
def _package():
    try:
        import onnxruntime_qnn
    except ImportError:
        return None
    return onnxruntime_qnn


def available() -> bool:
    return _package() is not None


def require():
    """The onnxruntime_qnn module, or HtpError saying how to install it."""
    package = _package()
    if package is None:
        raise HtpError(f"the htp backend needs Qualcomm's QNN libraries from onnxruntime-qnn, which is not "
                       f"installed: {INSTALL}")
    return package


def versions() -> dict[str, str]:
    """{"qnn": "2.51.0", "onnxruntime_qnn": "2.7.0", "onnxruntime": "1.32.0"}."""
    import onnxruntime
    package = require()
    info = package.build_and_package_info
    return {"qnn": info.qnn_version, "onnxruntime_qnn": info.__version__, "onnxruntime": onnxruntime.__version__}


@lru_cache(maxsize=None)
def _devices():
    import onnxruntime as ort
    package = require()
    ort.register_execution_provider_library(EP_NAME, package.get_library_path())
    devices = [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]
    if not devices:
        raise HtpError(f"onnxruntime-qnn {package.__version__} registered no QNN device with onnxruntime "
                       f"(a mismatched pair? {INSTALL})")
    return devices


def session_options(soc: dict, fp16: bool, *, log_level: int = 3, provider: dict | None = None,
                    config: dict | None = None):
    """onnxruntime SessionOptions with the QNN EP on the HTP backend for `soc` (configs/socs/):
    soc_model and htp_arch pick the device the graph is prepared for; fp16: run float ops in half
    precision (HTP's float precision). `provider`: more provider options; `config`: session config
    entries (ep.context_*)."""
    import onnxruntime as ort
    package = require()
    options = ort.SessionOptions()
    options.log_severity_level = log_level
    provider_options = {"backend_path": package.get_qnn_htp_path(), "soc_model": str(soc["soc_model"]),
                        "htp_arch": str(soc["htp_arch"]), **(provider or {})}
    if fp16:
        provider_options["enable_htp_fp16_precision"] = "1"
    options.add_provider_for_devices(_devices(), provider_options)
    for key, value in (config or {}).items():
        options.add_session_config_entry(key, str(value))
    return options


def saver_library() -> str:
    """libQnnSaver.so: a QNN backend that records every QNN API call as C source plus a params file."""
    import os
    return os.path.join(require().LIB_DIR_FULL_PATH, "libQnnSaver.so")
