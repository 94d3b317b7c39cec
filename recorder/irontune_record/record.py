"""Turns the calls an IRON model plans for tuning into irontune's `Calls`.

The IRON API read here, each where it is defined: "ref" is IRON's tune
module documentation (iron/tune/autotune.py, iron/tune/measure.py,
iron/lm/tune.py as rendered there); a file @ commit is amd/IRON's readable
source, followed where the reference is silent. docs/recording-format.md
("Recording from IRON") holds the same list; tests/fakes/iron_stub keeps
exactly this surface.

- a call, `iron.tune.autotune.Timed` (ref): `recording`, `values`,
  `contents`, `points`, each point's `weight` and `values` (ref `Point`);
- its recording: `steps` (each `op` and `refs()`, a ref's `root` and
  `nbytes`, None for the operator buffer whole), `bindings` (each `op`,
  `member`, `expression`) and `addresses` (ref, `Timed.op_values` and
  `op_inputs`); `name`, `values` (graph values, each with a `name`),
  `inputs` and `outputs` (iron/common/graph/trace.py @ 01c8638a,
  TracedGraph); a binding's `symbol` (same file, Binding); an expression's
  `value`, `scale`, `bias` (iron/common/graph/handle.py @ 057b08d4,
  Affine);
- an operator: `declaration.params` (ref, autotune `Shape`), `pinned`,
  `resolved(dev)` (ref), `domains(dev)` (iron/common/declare/operator.py
  @ 607010e5; the ref's prose names it `Operator.domains`), its class's
  `_tunable_fields` and `_members` (same file), `value(name)` and a
  value's `bounds` (ref, measure `judge`), `buffers`, each `name`,
  `fills`, `drains`, `shape`, `dtype` and `extent_axis(op.value(name))`
  (ref, measure `Standalone.written`); `iron.common.Extent`
  (iron/common/__init__.py @ 04e0f3ea, iron/common/declare/member.py @
  0a215bf9), the members a graph may bound per call.
"""

from __future__ import annotations

import dataclasses
import enum
import numbers

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


def _older(where: str, what: str, source: str) -> RecordError:
    """The error for an IRON without an API the recorder reads, naming it."""
    return RecordError(
        f"{where}: this IRON has no {what} ({source}); irontune_record reads "
        f"the IRON API docs/recording-format.md lists, which this IRON is older than"
    )


class Recorder:
    """Builds one `Calls` from IRON calls; operators are shared across calls by identity.

    `pb` is the generated recording_pb2 module; `dev` the device domains are
    asked for, or None to record no domains (irontune's catalogue then
    supplies them). `extent` is IRON's `iron.common.Extent`, the member
    class a graph may bound per call.
    """

    def __init__(self, pb, dev, extent) -> None:
        self.pb = pb
        self.dev = dev
        self.extent = extent
        self.calls = pb.Calls(format_version=pb.FORMAT_VERSION_2)
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
        try:
            params = tuple(op.declaration.params)
        except AttributeError:
            raise _older(where, "Operator.declaration.params",
                         "IRON's tune docs, iron/tune/autotune.py Shape") from None
        tunables = getattr(type(op), "_tunable_fields", None)
        if tunables is None:
            raise _older(where, "Operator._tunable_fields",
                         "iron/common/declare/operator.py @ 607010e5")
        out = self.calls.operators.add(class_name=cls)
        self._params(out, op, params, where)
        self._tunables(out, op, tunables, where)
        self._buffers(out, op, where)
        self._index[key] = len(self._ops)
        self._ops.append(op)
        self._values[self._index[key]] = set()
        return self._index[key]

    def _params(self, out, op, params, where: str) -> None:
        defaults = {f.name: f.default for f in dataclasses.fields(op)
                    if f.default is not dataclasses.MISSING}
        for name in params:
            value = getattr(op, name)
            if value is None:
                continue  # left to IRON to derive; a profile never names it
            p = out.params.add(name=name)
            _set_value(p.value, value, f"{where}.params.{name}")
            default = defaults.get(name)
            if default is not None and not callable(default):
                _set_value(p.default_value, default, f"{where}.params.{name} default")

    def _tunables(self, out, op, tunables, where: str) -> None:
        resolved, domains = op, {}
        if self.dev is not None:
            try:
                resolved = op.resolved(self.dev)
                domains = dict(resolved.domains(self.dev))
            except (ValueError, TypeError) as e:
                raise RecordError(f"{where}: IRON cannot resolve it for {self.dev}: {e}")
        for name in tunables:
            value = getattr(resolved, name)
            if value is None:
                continue  # unresolved without a device: irontune's default applies
            t = out.tunables.add(name=name)
            _set_value(t.value, value, f"{where}.tunables.{name}")
            if self.dev is None:
                continue
            # A tunable IRON does not search (pinned, no rule, its `when`
            # false) stays at its value.
            for i, v in enumerate(domains.get(name, (value,))):
                _set_value(t.domain.add(), v, f"{where}.tunables.{name}.domain[{i}]")
        pinned = set(op.pinned)
        out.pinned.extend(t.name for t in out.tunables if t.name in pinned)

    def _buffers(self, out, op, where: str) -> None:
        extents = [op.value(m.name) for m in type(op)._members
                   if isinstance(m, self.extent)]
        for b in op.buffers:
            fills, drains = bool(b.fills), bool(b.drains)
            if not (fills or drains):
                raise RecordError(f"{where}.{b.name}: neither fills nor drains")
            role = "BUFFER_ROLE_INOUT" if fills and drains else (
                "BUFFER_ROLE_IN" if fills else "BUFFER_ROLE_OUT")
            dtype = _dtype_name(b.dtype)
            if dtype not in _DTYPES:
                raise RecordError(
                    f"{where}.{b.name}: dtype {dtype} has no irontune DType "
                    f"(known: {', '.join(_DTYPES)})"
                )
            buf = out.buffers.add(
                name=b.name,
                role=self.pb.BufferRole.Value(role),
                dtype=self.pb.DType.Value(_DTYPES[dtype]),
                shape=[int(s) for s in b.shape] or [1],
                fills=fills,
                drains=drains,
            )
            for value in extents:
                axis = b.extent_axis(value)
                if axis is not None:
                    buf.extents.add(extent=value.bounds.name, axis=int(axis))

    def call_value(self, index: int, binding) -> None:
        """Declares the per-call value `binding` sets on operator `index`, once."""
        member = binding.member
        if member.name in self._values[index]:
            return
        self._values[index].add(member.name)
        bounds = member.bounds.name if member.bounds is not None else ""
        self.calls.operators[index].values.add(
            name=member.name, symbol=str(binding.symbol), bounds=bounds
        )

    # -- expressions ------------------------------------------------------

    def expression(self, out, e, where: str) -> None:
        """Writes IRON binding expression `e` into Expression `out`.

        IRON's is affine, `scale * value + bias` (Affine); a bare graph value
        or an integer is taken too.
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
        rec.name = str(recording.name or "")
        names = [_name(v) for v in recording.values]
        addresses = [_name(a) for a in recording.addresses]
        rec.values.extend(names + [a for a in addresses if a not in names])
        sizes = self._steps(rec, recording, f"{where}.recording")
        for name, nbytes in sizes.items():
            rec.buffers.add(name=name, nbytes=nbytes)
        rec.inputs.extend(_name(h) for h in recording.inputs)
        rec.outputs.extend(_name(h) for h in recording.outputs)
        running = {s.op for s in rec.steps}
        for i, b in enumerate(recording.bindings):
            self._binding(rec, b, running, f"{where}.recording.bindings[{i}]")
        zero = dict.fromkeys(addresses, 0)
        for k, v in {**zero, **dict(call.values)}.items():
            timed.values[k] = int(v)
        for name, data in dict(call.contents or {}).items():
            raw = data.tobytes() if hasattr(data, "tobytes") else bytes(data)
            timed.contents.add(buffer=name, data=raw)
        for point in call.points or ():
            p = timed.points.add(weight=float(point.weight))
            for k, v in {**zero, **dict(point.values)}.items():
                p.values[k] = int(v)

    def _steps(self, rec, recording, where: str) -> dict[str, int]:
        """Adds the steps; returns each graph buffer's size, in first-use order.

        Every ref is an operator buffer whole (`nbytes` None): the reference
        gives a ref that is part of its root no offset to place it at.
        """
        sizes: dict[str, int] = {}
        for i, step in enumerate(recording.steps):
            index = self.operator(step.op)
            op_buffers = self.calls.operators[index].buffers
            refs = list(step.refs())
            if len(refs) != len(op_buffers):
                raise RecordError(
                    f"{where}.steps[{i}]: {len(refs)} refs for "
                    f"{type(step.op).__name__}'s {len(op_buffers)} buffers"
                )
            s = rec.steps.add(op=index)
            for j, (ref, buf) in enumerate(zip(refs, op_buffers)):
                at = f"{where}.steps[{i}].refs()[{j}]"
                if ref.nbytes is not None:
                    raise RecordError(
                        f"{at}: {ref.nbytes} bytes of graph buffer {ref.root!r} for "
                        f"{type(step.op).__name__}.{buf.name}, a part of it; IRON's "
                        f"BufferRef as its tune docs show it (root, nbytes) names no "
                        f"offset for a part, so irontune_record cannot place it"
                    )
                own = _nbytes(self.pb, buf)
                if sizes.setdefault(ref.root, own) != own:
                    raise RecordError(
                        f"{at}: graph buffer {ref.root!r} is {sizes[ref.root]} bytes "
                        f"where an earlier step uses it, {own} for "
                        f"{type(step.op).__name__}.{buf.name}"
                    )
                s.refs.add(buffer=ref.root, offset=0, length=0)
        return sizes

    def _binding(self, rec, b, running: set[int], where: str) -> None:
        if self._index.get(id(b.op)) not in running:
            cls = type(b.op).__name__
            raise RecordError(f"{where}: binds {cls}, which no step of its recording runs")
        index = self._index[id(b.op)]
        self.call_value(index, b)
        out = rec.bindings.add(op=index, member=b.member.name)
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
