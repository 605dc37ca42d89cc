"""SCons.Tool.qnn_build: the plain tool name 'qnn_build' (registered by importing qnn_build.sconstool)."""

from qnn_build.sconstool import exists, generate  # noqa: F401
