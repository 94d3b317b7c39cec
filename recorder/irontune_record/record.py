"""Turns the calls an IRON model plans for tuning into irontune's `Calls`.

What is read from IRON (the surface tests/recorder/stub_iron keeps):

- a call (`iron.tune.autotune.Timed`): `recording`, `values` (name ->
  int), `contents` (graph buffer name -> array), `points` (each `weight`
  and `values`);
- its recording: `name`, `values` (per-call values, names or objects with
  `name`), `addresses` (per-call values a call leaves at 0), `steps` (each
  `op` and `refs()`, a ref's `root`, `offset` in bytes and `nbytes`, None
  for the operator buffer's own size), `bindings` (each `op`, `member`,
  `symbol` and `expression`), `inputs` and `outputs`, and `buffers` (graph
  buffer name -> bytes) where it has them;
- an operator: its class name, `declaration.params` and
  `declaration.tunables`, `pinned`, `buffers` (`name`, `direction`,
  `shape`, `dtype`, `extent_axis(extent)`), its class's `Extent` members
  (`_members`, each naming its param as `field.name`), and, for a device,
  `resolved(dev)` and its `_domains(dev)`.
"""

from __future__ import annotations

import dataclasses
import enum
import numbers
from collections.abc import Mapping

from .errors import RecordError

# IRON's dtype names (numpy's, with ml_dtypes' bfloat16) -> irontune's DType.
_DTYPES = {
    "bfloat16": "DTYPE_BF16",
    "float16": "DTYPE_F16",
    "float32": "DTYPE_F32",
    "int8": "DTYPE_I8",
    "uint8": "DTYPE_U8",
    "int16": "DTYPE_I16",
    "uint16": "DTYPE_U16",
    "int32": "DTYPE_I32",
    "uint32": "DTYPE_U32",
    "int64": "DTYPE_I64",
}

_ROLES = {"in": "BUFFER_ROLE_IN", "out": "BUFFER_ROLE_OUT", "inout": "BUFFER_ROLE_INOUT"}


def _name(x) -> str:
    """A per-call value or graph buffer given as a name or as an object with one."""
    return x if isinstance(x, str) else str(getattr(x, "name", x))


def _set_value(pb, value, where: str) -> None:
    """Sets irontune Value `pb` from a Python value; bool before int, as bool is one."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool):
        pb.bool_value = value
    elif isinstance(value, numbers.Integral):
        pb.int_value = int(value)
    elif isinstance(value, numbers.Real):
        pb.double_value = float(value)
    elif isinstance(value, str):
        pb.string_value = value
    else:
        raise RecordError(
            f"{where}: {value!r} ({type(value).__name__}) is not an int, bool, "
            f"float or string; irontune cannot record it"
        )


def _dtype_name(dtype) -> str:
    name = getattr(dtype, "name", None)
    if not isinstance(name, str):
        name = getattr(dtype, "__name__", str(dtype))
    return name


class Recorder:
    """Builds one `Calls` from IRON calls; operators are shared across calls by identity.

    `pb` is the generated recording_pb2 module; `dev` the device domains are
    asked for, or None to record no domains (irontune's catalogue then
    supplies them).
    """

    def __init__(self, pb, dev) -> None:
        self.pb = pb
        self.dev = dev
        self.calls = pb.Calls(format_version=pb.FORMAT_VERSION_1)
        self._index: dict[int, int] = {}  # id(IRON operator) -> Calls.operators index
        self._ops: list = []  # keeps each operator alive, so its id stays its own
        self._values: dict[int, set[str]] = {}  # operator index -> call value names

    # -- operators --------------------------------------------------------

    def operator(self, op) -> int:
        """Returns `op`'s index in Calls.operators, adding it the first time."""
        key = id(op)
        if key in self._index:
            return self._index[key]
        cls = type(op).__name__
        where = f"{cls} (operator {len(self._ops)})"
        declaration = getattr(op, "declaration", None)
        if declaration is None or not hasattr(declaration, "params"):
            raise RecordError(
                f"{where}: has no declaration (params, tunables); this IRON is "
                f"older than the one irontune_record follows"
            )
        out = self.calls.operators.add(class_name=cls)
        self._params(out, op, declaration, where)
        self._tunables(out, op, declaration, where)
        self._buffers(out, op, where)
        self._index[key] = len(self._ops)
        self._ops.append(op)
        self._values[self._index[key]] = set()
        return self._index[key]

    def _params(self, out, op, declaration, where: str) -> None:
        defaults = {}
        if dataclasses.is_dataclass(op):
            for f in dataclasses.fields(op):
                if f.default is not dataclasses.MISSING:
                    defaults[f.name] = f.default
        for name in declaration.params:
            value = vars(op).get(name, getattr(op, name, None))
            if value is None:
                continue  # left to IRON to derive; a profile never names it
            p = out.params.add(name=name)
            _set_value(p.value, value, f"{where}.params.{name}")
            default = defaults.get(name)
            if default is not None and not callable(default):
                _set_value(p.default_value, default, f"{where}.params.{name} default")

    def _tunables(self, out, op, declaration, where: str) -> None:
        resolved, domains = op, {}
        if self.dev is not None:
            try:
                resolved = op.resolved(self.dev)
                domains = dict(resolved._domains(self.dev))
            except (ValueError, TypeError) as e:
                raise RecordError(f"{where}: IRON cannot resolve it for {self.dev}: {e}")
        for name in getattr(declaration, "tunables", ()):
            value = vars(resolved).get(name, getattr(resolved, name, None))
            if value is None:
                continue  # unresolved without a device: irontune's default applies
            t = out.tunables.add(name=name)
            _set_value(t.value, value, f"{where}.tunables.{name}")
            if self.dev is None:
                continue
            # A tunable IRON does not search on this device stays at its value.
            for i, v in enumerate(domains.get(name, (value,))):
                _set_value(t.domain.add(), v, f"{where}.tunables.{name}.domain[{i}]")
        declared = [t.name for t in out.tunables]
        out.pinned.extend(n for n in declared if n in set(getattr(op, "pinned", ())))

    def _buffers(self, out, op, where: str) -> None:
        extents = [
            m for m in getattr(type(op), "_members", ()) if type(m).__name__ == "Extent"
        ]
        for b in op.buffers:
            direction = str(getattr(b.direction, "value", b.direction)).lower()
            if direction not in _ROLES:
                raise RecordError(f"{where}.{b.name}: unknown direction {b.direction!r}")
            dtype = _dtype_name(b.dtype)
            if dtype not in _DTYPES:
                raise RecordError(
                    f"{where}.{b.name}: dtype {dtype} has no irontune DType "
                    f"(known: {', '.join(_DTYPES)})"
                )
            buf = out.buffers.add(
                name=b.name,
                role=self.pb.BufferRole.Value(_ROLES[direction]),
                dtype=self.pb.DType.Value(_DTYPES[dtype]),
                shape=[int(s) for s in b.shape] or [1],
                fills=direction in ("in", "inout"),
                drains=direction in ("out", "inout"),
            )
            for m in extents:
                axis = b.extent_axis(m)
                if axis is not None:
                    buf.extents.add(extent=m.field.name, axis=int(axis))

    def call_value(self, index: int, binding) -> None:
        """Declares the per-call value `binding` sets on operator `index`, once."""
        name = _name(binding.member)
        if name in self._values[index]:
            return
        self._values[index].add(name)
        member = getattr(binding.member, "member", None)
        field = getattr(member, "field", None) if type(member).__name__ == "Extent" else None
        self.calls.operators[index].values.add(
            name=name, symbol=str(binding.symbol), bounds=field.name if field else ""
        )

    # -- expressions ------------------------------------------------------

    def expression(self, out, e, where: str) -> None:
        """Writes IRON binding expression `e` into Expression `out`.

        IRON's is affine, `scale * value + bias` (Affine); a bare value or an
        integer is taken too.
        """
        if isinstance(e, bool):
            raise RecordError(f"{where}: a bool is not an expression")
        if isinstance(e, numbers.Integral):
            out.constant = int(e)
            return
        if all(hasattr(e, a) for a in ("value", "scale", "bias")):
            self._affine(out, _name(e.value), int(e.scale), int(e.bias))
            return
        if hasattr(e, "name") and hasattr(e, "kind"):
            out.value = e.name
            return
        raise RecordError(
            f"{where}: {e!r} ({type(e).__name__}) is not an expression irontune "
            f"can write (an IRON Affine, a per-call value or an integer)"
        )

    def _affine(self, out, value: str, scale: int, bias: int) -> None:
        Op = self.pb.Expression.Op
        node = out
        if bias:
            node.binary.op = Op.Value("OP_ADD") if bias > 0 else Op.Value("OP_SUB")
            node.binary.rhs.constant = abs(bias)
            node = node.binary.lhs
        if scale != 1:
            node.binary.op = Op.Value("OP_MUL")
            node.binary.rhs.constant = scale
            node = node.binary.lhs
        node.value = value

    # -- calls ------------------------------------------------------------

    def add_call(self, call, where: str) -> None:
        """Adds IRON call `call` (a Timed) to Calls.calls."""
        recording = call.recording
        timed = self.calls.calls.add()
        rec = timed.recording
        rec.name = str(getattr(recording, "name", "") or "")
        names = [_name(v) for v in getattr(recording, "values", ())]
        addresses = [_name(a) for a in getattr(recording, "addresses", ())]
        rec.values.extend(names + [a for a in addresses if a not in names])
        sizes = self._steps(rec, recording, f"{where}.recording")
        for name, nbytes in sizes.items():
            rec.buffers.add(name=name, nbytes=nbytes)
        rec.inputs.extend(_name(h) for h in getattr(recording, "inputs", ()))
        rec.outputs.extend(_name(h) for h in getattr(recording, "outputs", ()))
        running = {s.op for s in rec.steps}
        for i, b in enumerate(getattr(recording, "bindings", ())):
            self._binding(rec, b, running, f"{where}.recording.bindings[{i}]")
        zero = dict.fromkeys(addresses, 0)
        for k, v in {**zero, **dict(call.values)}.items():
            timed.values[k] = int(v)
        for name, data in dict(getattr(call, "contents", {}) or {}).items():
            raw = data.tobytes() if hasattr(data, "tobytes") else bytes(data)
            timed.contents.add(buffer=name, data=raw)
        for point in getattr(call, "points", ()) or ():
            p = timed.points.add(weight=float(point.weight))
            for k, v in {**zero, **dict(point.values)}.items():
                p.values[k] = int(v)

    def _steps(self, rec, recording, where: str) -> dict[str, int]:
        """Adds the steps; returns each graph buffer's size, in first-use order."""
        sizes: dict[str, int] = {}
        declared = getattr(recording, "buffers", None)
        if isinstance(declared, Mapping):
            sizes.update((str(k), int(v)) for k, v in declared.items())
        for i, step in enumerate(recording.steps):
            index = self.operator(step.op)
            op_buffers = self.calls.operators[index].buffers
            refs = step.refs() if callable(step.refs) else step.refs
            refs = list(refs)
            if len(refs) != len(op_buffers):
                raise RecordError(
                    f"{where}.steps[{i}]: {len(refs)} refs for "
                    f"{type(step.op).__name__}'s {len(op_buffers)} buffers"
                )
            s = rec.steps.add(op=index)
            for j, (ref, buf) in enumerate(zip(refs, op_buffers)):
                offset = int(getattr(ref, "offset", 0) or 0)
                own = _nbytes(self.pb, buf)
                if ref.nbytes is not None and int(ref.nbytes) != own:
                    raise RecordError(
                        f"{where}.steps[{i}].refs[{j}]: {ref.nbytes} bytes of "
                        f"{ref.root} for {type(step.op).__name__}.{buf.name}, "
                        f"which is {own} bytes"
                    )
                length = 0 if ref.nbytes is None else own
                s.refs.add(buffer=ref.root, offset=offset, length=length)
                sizes[ref.root] = max(sizes.get(ref.root, 0), offset + own)
        return sizes

    def _binding(self, rec, b, running: set[int], where: str) -> None:
        if self._index.get(id(b.op)) not in running:
            cls = type(b.op).__name__
            raise RecordError(f"{where}: binds {cls}, which no step of its recording runs")
        index = self._index[id(b.op)]
        self.call_value(index, b)
        out = rec.bindings.add(op=index, member=_name(b.member))
        self.expression(out.expression, b.expression, where)


# Bytes per element of each irontune DType.
_SIZES = {
    "DTYPE_BF16": 2, "DTYPE_F16": 2, "DTYPE_F32": 4, "DTYPE_I8": 1, "DTYPE_U8": 1,
    "DTYPE_I16": 2, "DTYPE_U16": 2, "DTYPE_I32": 4, "DTYPE_U32": 4, "DTYPE_I64": 8,
}


def _nbytes(pb, buf) -> int:
    n = _SIZES[pb.DType.Name(buf.dtype)]
    for s in buf.shape:
        n *= s
    return n
