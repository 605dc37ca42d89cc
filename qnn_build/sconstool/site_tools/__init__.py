"""Holds qnn_build.py, the module SCons loads for the tool name `qnn_build` (see qnn_build.sconstool)."""
