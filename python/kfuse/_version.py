"""The kfuse version, written once: CMake reads it for the project, the C
API's KFUSE_VERSION_STRING and `kfuse --version`."""
__version__ = "0.1.0"
