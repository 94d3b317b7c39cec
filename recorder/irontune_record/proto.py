"""Loads irontune's generated protobuf modules, with an error that says how to get them.

The modules are generated from proto/irontune/v1/*.proto at build time (the
CMake target `irontune_record_py`), beside a copy of this package under
build/recorder/python; they are not kept in the source tree.
"""

from .errors import RecordError


def recording_pb2():
    """Returns the module holding `Calls` and the messages it is made of.

    Raises RecordError when protobuf's Python runtime or the generated module
    is missing.
    """
    try:
        import google.protobuf  # noqa: F401
    except ImportError as e:
        raise RecordError(
            f"protobuf's Python runtime is missing ({e}); install python3-protobuf"
        ) from e
    try:
        from irontune.v1 import recording_pb2 as module
    except ImportError as e:
        raise RecordError(
            f"irontune's generated module irontune.v1.recording_pb2 is missing "
            f"({e}); build the target irontune_record_py and run with "
            f"PYTHONPATH=<build>/recorder/python"
        ) from e
    if not hasattr(module, "FORMAT_VERSION_2"):
        raise RecordError(
            "irontune's generated module irontune.v1.recording_pb2 has no "
            "FORMAT_VERSION_2 (it was generated from an older "
            "proto/irontune/v1/recording.proto); rebuild irontune_record_py"
        )
    return module
