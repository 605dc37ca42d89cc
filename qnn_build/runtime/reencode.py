"""A model library composed with some tensors' encodings (and constant data) replaced: the range
search (quant/range_search.py) scores many encodings of one graph on the cpu backend without
compiling a library for each. The library's own compose function runs unchanged; the calls it
makes go through the wrappers here, which swap in the replacement for a tensor named in it."""

import ctypes

import numpy as np

_ADD_TENSOR = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int32,
                               ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32))
COMPOSE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class _Encoding(ctypes.Structure):  # qnnb_encoding (qnnb.h)
    _fields_ = [("kind", ctypes.c_int), ("bitwidth", ctypes.c_int32), ("is_signed", ctypes.c_int32),
                ("axis", ctypes.c_int32), ("block_axis", ctypes.c_int32), ("block_size", ctypes.c_int32),
                ("count", ctypes.c_int32), ("scales", ctypes.POINTER(ctypes.c_float)),
                ("offsets", ctypes.POINTER(ctypes.c_int32))]


_SET_ENCODING = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(_Encoding))


class _ComposeApi(ctypes.Structure):  # qnnb_compose_api (qnnb.h)
    _fields_ = [("api_version", ctypes.c_uint32), ("add_tensor", _ADD_TENSOR), ("add_node", ctypes.c_void_p),
                ("set_io", ctypes.c_void_p), ("set_encoding", _SET_ENCODING)]


class Reencoded:
    """The compose function of `lib` with `replace`: tensor name -> (Encoding or None, constant data
    or None). Constant data must have the dtype and size the library gives the tensor."""

    def __init__(self, lib: ctypes.CDLL, replace: dict):
        self._lib_compose = COMPOSE_FN(("qnnb_model_compose", lib))
        self._replace = replace
        self._keep = []   # arrays whose addresses the runtime holds until finalize has copied them
        self._names = {}  # tensor id -> name
        self.compose = COMPOSE_FN(self._compose)

    def _compose(self, api_ptr, graph):
        real = _ComposeApi.from_address(api_ptr)
        add_tensor, set_encoding = real.add_tensor, real.set_encoding

        def add(g, name, dtype, rank, dims, data, out_id):
            key = name.decode("utf-8")
            new = self._replace.get(key, (None, None))[1]
            if new is not None and data:
                new = np.ascontiguousarray(new)
                self._keep.append(new)
                data = new.ctypes.data
            status = add_tensor(g, name, dtype, rank, dims, data, out_id)
            self._names[out_id[0]] = key
            return status

        def encode(g, tid, enc):
            new = self._replace.get(self._names.get(tid), (None, None))[0]
            return set_encoding(g, tid, self._struct(new) if new is not None else enc)

        self._wrappers = (_ADD_TENSOR(add), _SET_ENCODING(encode))  # alive while the library calls them
        api = _ComposeApi(real.api_version, self._wrappers[0], real.add_node, real.set_io, self._wrappers[1])
        return self._lib_compose(ctypes.addressof(api), graph)

    def _struct(self, enc):
        if enc.is_float:
            return ctypes.pointer(_Encoding(1, 16, 1, -1, -1, 0, 0, None, None))
        scales = np.ascontiguousarray(enc.scales, np.float32)
        offsets = np.ascontiguousarray(enc.offsets, np.int32)
        self._keep += [scales, offsets]
        return ctypes.pointer(_Encoding(0, enc.bitwidth, int(enc.is_signed), enc.axis, enc.block_axis, enc.block_size,
                                        len(scales), scales.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                        offsets.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))))
