"""`python3 -m irontune_record APP --out FILE [APP's flags]`.

APP is an IRON application, dotted under `iron.applications` as
`python -m iron.lm.tune APP` takes it. Its model is found by IRON's own
`iron.lm.tune.application_model`; the model adds its flags
(`tune_arguments`) and plans the calls it is tuned in (`tune_calls`), and
those calls are written as irontune's `Calls`. `APP --help` lists the
model's flags too.

Exit status: 0 written; 1 recording failed (the message names what and
where); 2 a usage error (no APP, no such application, a bad flag).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from pathlib import Path

from .errors import RecordError
from .proto import recording_pb2
from .record import Recorder

PROG = "python3 -m irontune_record"
FORMATS = (".rec", ".txtpb", ".json")


def _parser(with_app: bool) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Record the calls an IRON application is tuned in as "
        "irontune's .rec, for `irontune-client submit`. The model, its calls, "
        "their per-call values, points and contents come from IRON's own "
        "tune surface (iron.lm.tune.application_model, the model's tune_calls; "
        "docs/recording-format.md lists every IRON API read).",
        epilog="The application's own flags (e.g. --checkpoint, --position, "
        "--context, --points) follow; `APP --help` lists them.",
    )
    parser.add_argument(
        "app",
        metavar="APP",
        help="the application, dotted under iron.applications (e.g. llama_3_2_1b)"
        + ("" if with_app else "; required"),
    )
    parser.add_argument(
        "--out",
        required=True,
        type=Path,
        help="the file to write: .rec (protobuf binary, what irontune reads "
        "fastest), .txtpb or .json; replaced atomically",
    )
    parser.add_argument(
        "--no-device",
        action="store_true",
        help="do not ask IRON for the current NPU: record no domains, so "
        "irontune's catalogue supplies them (the default records the domains "
        "IRON declares for this machine's NPU when it has one)",
    )
    return parser


def application_model(name: str):
    """The model class IRON tunes for application `name` (IRON's own lookup).

    Raises RecordError when IRON cannot be imported and ValueError (IRON's)
    when it has no such application.
    """
    try:
        tune = importlib.import_module("iron.lm.tune")
    except ImportError as e:
        raise RecordError(
            f"cannot import IRON's iron.lm.tune ({e}); run where IRON is "
            f"installed, or put it on PYTHONPATH"
        ) from e
    find = getattr(tune, "application_model", None)
    if find is None:
        raise RecordError(
            "this IRON has no iron.lm.tune.application_model (IRON's tune docs, "
            "iron/lm/tune.py), which finds an application's model: it is older "
            "than the IRON API irontune_record reads"
        )
    return find(name)


def _extent():
    """IRON's `iron.common.Extent`, the member a graph may bound per call."""
    try:
        common = importlib.import_module("iron.common")
    except ImportError as e:
        raise RecordError(f"cannot import IRON's iron.common ({e})") from e
    extent = getattr(common, "Extent", None)
    if extent is None:
        raise RecordError(
            "this IRON has no iron.common.Extent (iron/common/__init__.py @ "
            "04e0f3ea): it is older than the IRON API irontune_record reads"
        )
    return extent


def _device(no_device: bool):
    """The NPU IRON binds on this machine, or None (then no domains are recorded)."""
    if no_device:
        return None
    try:
        utils = importlib.import_module("aie.utils")
        return utils.ensure_current_device()
    except Exception as e:  # IRON raises its own kinds when no NPU is present
        print(f"{PROG}: no NPU device ({e}); recording no domains", file=sys.stderr)
        return None


def record(model, parser, args):
    """Returns the `Calls` message of the calls `model` plans for `args`."""
    try:
        calls = list(model.tune_calls(parser, args))
    except (ValueError, OSError) as e:
        raise RecordError(f"{args.app}: IRON could not plan its calls: {e}") from e
    if not calls:
        raise RecordError(f"{args.app}: its model's tune_calls planned no calls")
    pb = recording_pb2()
    dev = _device(args.no_device)
    recorder = Recorder(pb, dev, _extent())
    for i, call in enumerate(calls):
        if not list(call.recording.steps):
            raise RecordError(f"{args.app}: calls[{i}] runs no operator")
        try:
            recorder.add_call(call, f"calls[{i}]")
        except AttributeError as e:
            raise RecordError(
                f"calls[{i}]: {e}: this IRON lacks an API irontune_record reads "
                f"(docs/recording-format.md, Recording from IRON, lists them)"
            ) from e
    return recorder.calls


def write(calls, path: Path) -> None:
    """Writes `calls` to `path` in the encoding its extension names, atomically.

    Format 2: its `counts` are set here, last, to what is written, so a
    reader tells a file cut short from a whole one.
    """
    calls.counts.operators = len(calls.operators)
    calls.counts.calls = len(calls.calls)
    if path.suffix == ".rec":
        data = calls.SerializeToString(deterministic=True)
    elif path.suffix == ".txtpb":
        from google.protobuf import text_format

        data = text_format.MessageToString(calls).encode()
    else:
        from google.protobuf import json_format

        data = json_format.MessageToJson(calls, preserving_proto_field_name=True).encode()
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # APP first, as iron.lm.tune takes it: --help after it lists its flags.
    first = argparse.ArgumentParser(add_help=False)
    first.add_argument("app", nargs="?")
    first.add_argument("--out")
    known, _ = first.parse_known_args(argv)
    if known.app is None or known.app.startswith("-"):
        _parser(with_app=False).parse_args(argv)  # prints help or names what is missing
        return 2
    parser = _parser(with_app=True)
    try:
        model = application_model(known.app)
    except ValueError as e:
        parser.error(str(e))
    except RecordError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    model.tune_arguments(parser)
    args = parser.parse_args(argv)
    if args.out.suffix not in FORMATS:
        parser.error(f"--out {args.out}: the extension must be one of {', '.join(FORMATS)}")
    if not args.out.parent.is_dir() and str(args.out.parent):
        parser.error(f"--out {args.out}: no directory {args.out.parent}")
    try:
        calls = record(model, parser, args)
        write(calls, args.out)
    except RecordError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    ops = len(calls.operators)
    print(f"{args.out}: {len(calls.calls)} calls, {ops} operators", file=sys.stderr)
    return 0
