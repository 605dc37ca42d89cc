// Comparisons and logic, broadcasting: Equal, Greater, GreaterOrEqual, Less, LessOrEqual (float32,
// int32, int64, 8/16-bit integer or bool operands of one dtype; bool output), And, Or, Xor, Not (bool),
// IsNaN (float32 to bool).
#include <cmath>
#include <functional>

#include "broadcast_loop.h"

namespace qnnb {
namespace {

bool prepare_compare(Node& n, std::string& err) {
    const qnnb_dtype t = n.in[0]->dtype;
    if (n.in[1]->dtype != t) {
        err = std::string("operands have dtypes ") + dtype_name(t) + " and " + dtype_name(n.in[1]->dtype);
        return false;
    }
    const bool logic = n.op == "And" || n.op == "Or" || n.op == "Xor";
    if (logic ? t != QNNB_BOOL
              : (t != QNNB_FLOAT32 && t != QNNB_INT32 && t != QNNB_INT64 && t != QNNB_BOOL && t != QNNB_UINT8 &&
                 t != QNNB_INT8 && t != QNNB_UINT16 && t != QNNB_INT16)) {
        err = std::string("operands of dtype ") + dtype_name(t) + " are not supported";
        return false;
    }
    if (n.out[0]->dtype != QNNB_BOOL) {
        err = "the output must be bool";
        return false;
    }
    std::vector<const Tensor*> ins(n.in.begin(), n.in.end());
    return plan_broadcast(ins, n.out[0]->shape, n.make_state<BroadcastPlan>(), err);
}

template <class T, class F>
void run_compare_as(Node& n, const ExecContext& ctx, F f) {
    run_broadcast_binary<T, uint8_t>(n, ctx, [&](T a, T b) -> uint8_t { return f(a, b) ? 1 : 0; });
}

template <class F>
void run_compare(Node& n, const ExecContext& ctx, F f) {
    switch (n.in[0]->dtype) {
        case QNNB_FLOAT32: run_compare_as<float>(n, ctx, f); break;
        case QNNB_INT32: run_compare_as<int32_t>(n, ctx, f); break;
        case QNNB_INT64: run_compare_as<int64_t>(n, ctx, f); break;
        case QNNB_INT16: run_compare_as<int16_t>(n, ctx, f); break;
        case QNNB_UINT16: run_compare_as<uint16_t>(n, ctx, f); break;
        case QNNB_INT8: run_compare_as<int8_t>(n, ctx, f); break;
        default: run_compare_as<uint8_t>(n, ctx, f); break;  // uint8, bool
    }
}

void run_equal(Node& n, const ExecContext& ctx) { run_compare(n, ctx, std::equal_to<>()); }
void run_greater(Node& n, const ExecContext& ctx) { run_compare(n, ctx, std::greater<>()); }
void run_greater_equal(Node& n, const ExecContext& ctx) { run_compare(n, ctx, std::greater_equal<>()); }
void run_less(Node& n, const ExecContext& ctx) { run_compare(n, ctx, std::less<>()); }
void run_less_equal(Node& n, const ExecContext& ctx) { run_compare(n, ctx, std::less_equal<>()); }
void run_and(Node& n, const ExecContext& ctx) { run_compare(n, ctx, [](uint8_t a, uint8_t b) { return a && b; }); }
void run_or(Node& n, const ExecContext& ctx) { run_compare(n, ctx, [](uint8_t a, uint8_t b) { return a || b; }); }
void run_xor(Node& n, const ExecContext& ctx) { run_compare(n, ctx, [](uint8_t a, uint8_t b) { return !a != !b; }); }

bool prepare_not(Node& n, std::string& err) {
    if (n.in[0]->dtype != QNNB_BOOL || n.out[0]->dtype != QNNB_BOOL || n.in[0]->numel() != n.out[0]->numel()) {
        err = "Not takes a bool tensor to one of the same size";
        return false;
    }
    return true;
}

void run_not(Node& n, const ExecContext&) {
    const uint8_t* x = n.in[0]->in<uint8_t>();
    uint8_t* y = n.out[0]->out<uint8_t>();
    for (int64_t i = 0, total = n.out[0]->numel(); i < total; ++i) y[i] = x[i] ? 0 : 1;
}

bool prepare_is_nan(Node& n, std::string& err) {
    if (n.in[0]->dtype != QNNB_FLOAT32 || n.out[0]->dtype != QNNB_BOOL || n.in[0]->numel() != n.out[0]->numel()) {
        err = "IsNaN takes a float32 tensor to a bool one of the same size";
        return false;
    }
    return true;
}

void run_is_nan(Node& n, const ExecContext&) {
    const float* x = n.in[0]->in<float>();
    uint8_t* y = n.out[0]->out<uint8_t>();
    for (int64_t i = 0, total = n.out[0]->numel(); i < total; ++i) y[i] = std::isnan(x[i]) ? 1 : 0;
}

const Kernel kKernels[] = {
    {"Equal", prepare_compare, run_equal},
    {"Greater", prepare_compare, run_greater},
    {"GreaterOrEqual", prepare_compare, run_greater_equal},
    {"Less", prepare_compare, run_less},
    {"LessOrEqual", prepare_compare, run_less_equal},
    {"And", prepare_compare, run_and},
    {"Or", prepare_compare, run_or},
    {"Xor", prepare_compare, run_xor},
    {"Not", prepare_not, run_not},
    {"IsNaN", prepare_is_nan, run_is_nan},
};

}  // namespace

extern const KernelTable kCpuLogicKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
