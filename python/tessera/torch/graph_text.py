"""Builds one graph IR text (docs/graph_ir.md) for a segment of an FX graph.

The builder only formats: it knows the text syntax, the dtype names and how to print
attribute values so that they read back exactly. It never decides what an aten op means
(aten_ops.py does) and never touches torch tensors' data. Every node is written with its
result type, so a translator bug shows up as a located parse error, not a wrong answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

# torch dtype -> graph IR dtype name. Anything else is not representable: the node falls back.
DTYPE_NAMES = {
    torch.bool: "bool",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.float64: "f64",
}
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class Unsupported(Exception):
    """A node the graph IR cannot express (the reason is reported by explain)."""


def dtype_name(dt: torch.dtype) -> str:
    name = DTYPE_NAMES.get(dt)
    if name is None:
        raise Unsupported(f"dtype {dt} has no graph IR equivalent")
    return name


def format_number(v) -> str:
    """A scalar attribute: ints stay ints; floats use repr (shortest text that reads back
    bit-exact), with inf/-inf/nan spelled as the graph IR text expects."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def format_attr(v) -> str:
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(str(int(x)) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    return format_number(v)


def type_text(dtype: torch.dtype, shape, strides=None) -> str:
    s = f"tensor<{dtype_name(dtype)}, [{', '.join(str(int(d)) for d in shape)}]"
    if strides is not None:
        s += f", strides [{', '.join(str(int(x)) for x in strides)}]"
    return s + ">"


def contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(int(d), 1)
    return tuple(reversed(strides))


@dataclass
class Value:
    """An SSA value of the segment under construction."""

    name: str
    dtype: torch.dtype
    shape: tuple

    @property
    def rank(self):
        return len(self.shape)


@dataclass
class SegmentText:
    """Params (each with the FX node whose torch value feeds it), body lines, returns."""

    params: list = field(default_factory=list)      # (fx node, Value, strides or None)
    lines: list = field(default_factory=list)
    counter: int = 0

    def add_param(self, node, dtype, shape, strides) -> Value:
        v = Value(f"%a{len(self.params)}", dtype, tuple(int(d) for d in shape))
        dtype_name(dtype)  # refuse an unrepresentable dtype here, before any use
        self.params.append((node, v, strides))
        return v

    def emit(self, op: str, operands, attrs: dict | None, dtype, shape) -> Value:
        v = Value(f"%v{self.counter}", dtype, tuple(int(d) for d in shape))
        self.counter += 1
        text = f"  {v.name} = {op}"
        if operands:
            text += " " + ", ".join(o.name for o in operands)
        if attrs:
            text += " {" + ", ".join(f"{k} = {format_attr(a)}" for k, a in attrs.items()) + "}"
        text += " : " + type_text(dtype, v.shape)
        self.lines.append(text)
        return v

    def snapshot(self):
        return (len(self.params), len(self.lines), self.counter)

    def rollback(self, snap):
        n_params, n_lines, counter = snap
        del self.params[n_params:]
        del self.lines[n_lines:]
        self.counter = counter

    def live_lines(self, outputs):
        """The lines the outputs depend on (a handler may leave dead views behind, and a
        value needed only by torch-side view replays is never computed here)."""
        live = {o.name for o in outputs}
        keep = []
        for line in reversed(self.lines):
            lhs, rhs = line.split(" = ", 1)
            if lhs.strip() not in live:
                continue
            keep.append(line)
            operands = rhs.split(" {", 1)[0].split(" : ", 1)[0]
            live.update(tok.strip(",") for tok in operands.split() if tok.startswith("%"))
        return list(reversed(keep))

    def render(self, name: str, outputs) -> str:
        params = ", ".join(
            f"{v.name}: {type_text(v.dtype, v.shape, strides)}" for _, v, strides in self.params
        )
        body = "\n".join(self.live_lines(outputs))
        ret = ", ".join(o.name for o in outputs)
        return f"graph @{name}({params}) {{\n{body}\n  return {ret}\n}}\n"
