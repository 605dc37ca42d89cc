"""Runtime op types grouped by what they do to values, for the passes and backends that treat a
group alike. The one list of each: the quantizer, the npu backend, the QDQ export and the C++
registry (runtime/npu/registry.cpp kByteMovers, held equal by tests/test_float_fallback.py) read these.
"""

# The output holds elements of input 0, only moved (no arithmetic). With the output encoded as its
# input, an integer backend moves the codes exactly: the npu runs the cpu kernel on stored integers.
BYTE_MOVERS = frozenset({"Identity", "Reshape", "Transpose", "Slice", "Gather", "Split", "Expand", "Tile",
                         "DepthToSpace", "SpaceToDepth", "GatherElements", "GatherND"})

# Every output value is a value of input 0: the byte movers, a selection (max pooling, TopK's values;
# its indices are int64), and padding with a value the encoding holds (Pad; Trilu's zeros: 0 is on
# every activation's grid). The quantizer gives such an output its input's encoding, so the integer
# backend requantizes nothing.
VALUE_KEEPERS = BYTE_MOVERS | {"Pad", "MaxPool", "GlobalMaxPool", "TopK", "Trilu"}
