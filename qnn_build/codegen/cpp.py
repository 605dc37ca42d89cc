"""model.cpp: the lowered graph as calls into the runtime's compose API.

Names from the model reach C++ only as escaped string literals (every byte outside printable ASCII,
and `"`, `\\`, `?`, as an octal escape), never as identifiers or inside comments, so any name
compiles. Float parameters are written as exact hexadecimal literals.
"""

import math

import numpy as np
from onnx import helper

from .. import __version__
from ..ir.dtypes import DTYPE_ENUM
from ..ir.graph import Graph
from .weights import WeightEntry

PRECISION_SYMBOL = "qnnb_model_precision"
BIN_SYMBOL = "qnnb_model_bin"
# Statements per compose function: the compiler's time grows faster than the length of one function
# (an unrolled 500-step decoder is 200,000 lines), so the graph is composed in parts of this many.
PART_STATEMENTS = 400


def c_string(text: str) -> str:
    out = []
    for b in text.encode("utf-8"):
        ch = chr(b)
        if 0x20 <= b < 0x7F and ch not in '"\\?':
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def c_int(v: int) -> str:
    v = int(v)
    if v == -(2**63):
        return "(-9223372036854775807LL - 1)"
    return f"{v}LL"


def c_float(v: float) -> str:
    v = float(np.float32(v))
    if math.isnan(v):
        return '__builtin_nanf("")'
    if math.isinf(v):
        return "__builtin_inff()" if v > 0 else "-__builtin_inff()"
    return v.hex() + "f"


def _array(ctype: str, name: str, values: list[str]) -> str:
    return f"static const {ctype} {name}[] = {{{', '.join(values)}}};"


def _param_lines(params: dict) -> tuple[list[str], list[str]]:
    """(array declarations, qnnb_param initialisers) for one node's parameters, sorted by name."""
    decls, items = [], []
    for k, (name, value) in enumerate(sorted(params.items())):
        if isinstance(value, str):
            items.append(f"{{{c_string(name)}, QNNB_PARAM_STRING, 0, nullptr, nullptr, {c_string(value)}}}")
            continue
        values = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
        is_float = any(isinstance(v, (float, np.floating)) for v in values)
        if not values:
            kind = "QNNB_PARAM_FLOATS" if is_float else "QNNB_PARAM_INTS"
            items.append(f"{{{c_string(name)}, {kind}, 0, nullptr, nullptr, nullptr}}")
        elif is_float:
            decls.append(_array("float", f"p{k}", [c_float(v) for v in values]))
            items.append(f"{{{c_string(name)}, QNNB_PARAM_FLOATS, {len(values)}, nullptr, p{k}, nullptr}}")
        else:
            decls.append(_array("int64_t", f"p{k}", [c_int(v) for v in values]))
            items.append(f"{{{c_string(name)}, QNNB_PARAM_INTS, {len(values)}, p{k}, nullptr, nullptr}}")
    return decls, items


def _encoding_lines(enc, tid: int) -> str:
    if enc.is_float:
        return (f"    {{ const qnnb_encoding e = {{QNNB_ENCODING_FP16, 16, 1, -1, -1, 0, 0, nullptr, nullptr}}; "
                f"QNNB_CHECK(api->set_encoding(g, t[{tid}], &e)); }}")
    scales = _array("float", "s", [c_float(v) for v in enc.scales])
    offsets = _array("int32_t", "o", [str(int(v)) for v in enc.offsets])
    return (f"    {{ {scales} {offsets}\n      const qnnb_encoding e = {{QNNB_ENCODING_INT, {enc.bitwidth}, "
            f"{int(enc.is_signed)}, {enc.axis}, {enc.block_axis}, {enc.block_size}, {len(enc.scales)}, s, o}}; "
            f"QNNB_CHECK(api->set_encoding(g, t[{tid}], &e)); }}")


def tensor_dtype_enum(t) -> str:
    if t.is_const and t.encoding is not None and not t.encoding.is_float and t.encoding.bitwidth == 4:
        return "QNNB_INT4"
    return DTYPE_ENUM[np.dtype(t.dtype)]


def generate_cpp(graph: Graph, weights: dict[str, WeightEntry], precision: str = "fp32") -> str:
    ids: dict[str, int] = {}
    names = list(graph.inputs)
    for node in graph.nodes:
        names.extend(n for n in node.inputs + node.outputs if n)
    names.extend(graph.outputs)
    for n in names:
        ids.setdefault(n, len(ids))

    body = []  # one statement (a block of lines) per tensor, encoding and node
    for name, tid in ids.items():
        t = graph.tensor(name)
        dims = "nullptr"
        decl = ""
        if t.shape:
            decl = _array("int64_t", "d", [c_int(d) for d in t.shape]) + " "
            dims = "d"
        data = f"{BIN_SYMBOL} + {weights[name].offset}" if name in weights else "nullptr"
        body.append(f"    {{ {decl}QNNB_CHECK(api->add_tensor(g, {c_string(name)}, {tensor_dtype_enum(t)}, "
                    f"{len(t.shape)}, {dims}, {data}, &t[{tid}])); }}")
        if t.encoding is not None:
            body.append(_encoding_lines(t.encoding, tid))
    for node in graph.nodes:
        ins = ", ".join(f"t[{ids[n]}]" if n else "QNNB_NO_TENSOR" for n in node.inputs)
        outs = ", ".join(f"t[{ids[n]}]" if n else "QNNB_NO_TENSOR" for n in node.outputs)
        decls, items = _param_lines(node.attrs)
        lines = ["    {"]
        lines += [f"        {d}" for d in decls]
        if ins:
            lines.append(f"        const qnnb_tensor_id in[] = {{{ins}}};")
        lines.append(f"        const qnnb_tensor_id out[] = {{{outs}}};")
        if items:
            lines.append("        const qnnb_param p[] = {")
            lines += [f"            {item}," for item in items]
            lines.append("        };")
        lines.append(f"        QNNB_CHECK(api->add_node(g, {c_string(node.name)}, {c_string(node.op_type)}, "
                     f"{'in' if ins else 'nullptr'}, {len(node.inputs)}, out, {len(node.outputs)}, "
                     f"{'p' if items else 'nullptr'}, {len(items)}));")
        lines.append("    }")
        body.append("\n".join(lines))
    parts = [body[k:k + PART_STATEMENTS] for k in range(0, len(body), PART_STATEMENTS)]
    io_in = ", ".join(f"t[{ids[n]}]" for n in graph.inputs)
    io_out = ", ".join(f"t[{ids[n]}]" for n in graph.outputs)
    entry = [f"    QNNB_CHECK(compose_part_{k}(api, g, t));" for k in range(len(parts))]
    entry.append("    {")
    if graph.inputs:
        entry.append(f"        const qnnb_tensor_id in[] = {{{io_in}}};")
    entry.append(f"        const qnnb_tensor_id out[] = {{{io_out}}};")
    entry.append(f"        return api->set_io(g, {'in' if graph.inputs else 'nullptr'}, {len(graph.inputs)}, "
                 f"out, {len(graph.outputs)});")
    entry.append("    }")
    functions = "".join(f"static qnnb_status compose_part_{k}(const qnnb_compose_api* api, qnnb_graph* g, "
                        f"qnnb_tensor_id* t) {{\n" + "\n".join(part) + "\n    return QNNB_OK;\n}\n\n"
                        for k, part in enumerate(parts))

    head = f"""\
// Generated by qnn-build {__version__} (convert). Do not edit: convert the source model again.
// {len(ids)} tensors, {len(graph.nodes)} nodes. Constant data lives in model.bin, which
// `qnn-build model-lib` embeds in the library as the symbol {BIN_SYMBOL}.
#include "qnnb.h"

extern "C" const unsigned char {BIN_SYMBOL}[];

#define QNNB_CHECK(call) do {{ qnnb_status s_ = (call); if (s_ != QNNB_OK) return s_; }} while (0)

// The precision it was converted at: a step that expects another refuses the library by name.
extern "C" QNNB_EXPORT const char {PRECISION_SYMBOL}[] = "{precision}";

"""
    entry_head = f"""\
extern "C" QNNB_EXPORT qnnb_status qnnb_model_compose(const qnnb_compose_api* api, qnnb_graph* g) {{
    if (api->api_version != QNNB_API_VERSION) return QNNB_ERR_API_VERSION;
    qnnb_tensor_id t[{max(len(ids), 1)}];
"""
    return head + functions + entry_head + "\n".join(entry) + "\n}\n"


def onnx_code(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
