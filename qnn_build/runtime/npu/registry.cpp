// The npu backend's op table. A node whose output is an fp16 activation runs the cpu kernel (fp16
// storage semantics: docs/npu.md); every other node needs an integer kernel from these tables.
// Ops that only move bytes (their output shares the input's encoding) run the cpu kernels, which
// are written for any element type.
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../core/graph.h"
#include "npu.h"
#include "refusal.h"

namespace qnnb {
namespace npu {
extern const KernelTable kNpuElementwiseKernels;
extern const KernelTable kNpuLutKernels;
extern const KernelTable kNpuConvKernels;           // (N10)-(N11), (N15): Conv
extern const KernelTable kNpuConvTransposeKernels;  // (N12), (N15)
extern const KernelTable kNpuMatmulKernels;  // (N13)-(N15): Gemm, MatMul
extern const KernelTable kNpuConvertKernels;
extern const KernelTable kNpuMovementKernels;  // docs/npu.md (N20)-(N23)
extern const KernelTable kNpuPoolKernels;      // (N24)-(N25)
extern const KernelTable kNpuReduceKernels;    // (N24)-(N26)
extern const KernelTable kNpuNormKernels;      // (N27)-(N29)
extern const KernelTable kNpuArithKernels;     // (N30)-(N33)
extern const KernelTable kNpuCompareKernels;   // (N35)
extern const KernelTable kNpuIndexKernels;     // (N36)
}  // namespace npu

static const KernelTable* const kNpuFamilies[] = {
    &npu::kNpuElementwiseKernels,
    &npu::kNpuLutKernels,
    &npu::kNpuConvKernels,
    &npu::kNpuConvTransposeKernels,
    &npu::kNpuMatmulKernels,
    &npu::kNpuConvertKernels,
    &npu::kNpuMovementKernels,
    &npu::kNpuPoolKernels,
    &npu::kNpuReduceKernels,
    &npu::kNpuNormKernels,
    &npu::kNpuArithKernels,
    &npu::kNpuCompareKernels,
    &npu::kNpuIndexKernels,
};

static const std::unordered_set<std::string> kByteMovers = {
    "Identity", "Reshape", "Transpose", "Slice", "Gather", "Split", "Expand", "Tile", "DepthToSpace",
    "SpaceToDepth", "GatherElements", "GatherND",
};

// Every output holds its input's codes unchanged (same dtype and encoding: PASS_THROUGH), so moving
// bytes is exact; otherwise the npu kernel re-encodes (docs/npu.md (N20)).
static bool shares_encoding(const Node& node) {
    const Tensor* x = node.input(0);
    if (!x) return false;
    for (const Tensor* o : node.out) {
        if (!o) continue;
        const Encoding &a = x->encoding, &b = o->encoding;
        if (o->dtype != x->dtype || a.kind != b.kind || a.bitwidth != b.bitwidth || a.is_signed != b.is_signed ||
            a.scales != b.scales || a.offsets != b.offsets)
            return false;
    }
    return true;
}

// Ops that move the codes of operands the converter brought to the output's encoding (docs/npu.md
// (N37)): the scatters' data and updates (not with a reduction, which would combine codes), OneHot's
// [off, on] values.
static const std::unordered_map<std::string, std::vector<size_t>> kMoved = {
    {"ScatterElements", {0, 2}}, {"ScatterND", {0, 2}}, {"OneHot", {1}}};

// A scatter with a reduction adds or multiplies codes: no integer form. The converter asks the same
// per node (npu_lowering/code_movers.py moves_codes, through backends/npu.py integer_refusal, for
// --float-fallback, quant/fallback.py); this check stands on its own, so a context binary that holds
// such a node is refused by name whoever wrote it.
static bool reduces(const Node& node) {
    return kMoved.count(node.op) && node.op != "OneHot" && node.params.s("reduction", "none") != "none";
}

static bool refuse_reduction(Node& n, std::string& err) {
    err = npu::refusal(n, "reduction '" + n.params.s("reduction", "none") + "'");
    return false;
}
static const Kernel kReductionRefusal = {"", refuse_reduction, npu::run_nothing};

static bool moves_shared_codes(const Node& node) {
    const auto it = kMoved.find(node.op);
    const Tensor* y = node.output(0);
    if (it == kMoved.end() || !y || reduces(node)) return false;
    for (size_t k : it->second)
        if (!node.input(k) || !npu::same_encoding(*node.input(k), *y)) return false;
    return true;
}

const Kernel* npu_find_kernel(const Node& node) {
    static const auto* index = [] {
        auto* m = new std::unordered_map<std::string, const Kernel*>();
        for (const KernelTable* family : kNpuFamilies)
            for (size_t i = 0; i < family->count; ++i) (*m)[family->kernels[i].op] = &family->kernels[i];
        return m;
    }();
    const Tensor* out = node.output(0);
    const bool fp16_node = out && out->encoding.present() && out->encoding.kind == QNNB_ENCODING_FP16;
    const bool unencoded = out && !out->encoding.present();  // int64/bool results (indices, masks)
    // Dequantize writes fp16 but is the npu's own conversion (docs/npu.md (N40)): not a cpu-kernel fp16 node.
    const bool boundary = node.op == "Dequantize";
    // ArgMax/ArgMin of integer codes (N26), a comparison of codes (N35; either operand may be the
    // constant): npu kernels.
    const auto is_codes = [](const Tensor* t) { return t && t->encoding.present() && t->encoding.kind == QNNB_ENCODING_INT; };
    const Tensor* x = node.input(0);
    const bool of_codes = (is_codes(x) && !x->is_const()) || is_codes(node.input(1));
    const bool byte_mover = (kByteMovers.count(node.op) && shares_encoding(node)) || moves_shared_codes(node);
    if (!boundary && (fp16_node || (unencoded && !of_codes) || byte_mover)) return cpu_find_kernel(node.op);
    if (reduces(node)) return &kReductionRefusal;
    auto it = index->find(node.op);
    return it == index->end() ? nullptr : it->second;
}

}  // namespace qnnb
