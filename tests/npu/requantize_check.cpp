// Holds the fast forms of the npu's requantization (qnn_build/runtime/npu/requantize.h) equal to
// its reference, requantize(), on edge cases and on random inputs; prints the reference's results
// on a sample so that the Python test can check them against (N2) in exact integers (where the exact
// result fits int64, as every result a kernel uses does).
// Usage: requantize_check COUNT SEED. Output: "mismatches N" then "acc mult shift result" lines.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "requantize.h"

using namespace qnnb::npu;

int main(int argc, char** argv) {
    const long count = argc > 1 ? std::atol(argv[1]) : 1000000;
    std::mt19937_64 rng(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1);
    const int64_t two31 = int64_t{1} << 31;
    // Accumulators where the forms switch (the int32 bound) and where rounding ties sit.
    std::vector<int64_t> edges = {0, 1, -1, 2, -2, two31 - 1, -(two31 - 1), two31, -two31, two31 + 1, -two31 - 1,
                                  int64_t{1} << 40, -(int64_t{1} << 40), (int64_t{1} << 62) - 1, -(int64_t{1} << 62)};
    std::vector<int32_t> mults = {0, 1, 1 << 30, (1 << 30) + 1, 0x7fffffff, 0x5a827999};
    long mismatches = 0;
    auto check = [&](int64_t acc, int32_t mult, int32_t shift, bool print) {
        const int64_t ref = requantize(acc, mult, shift);
        if (requantize_fast(acc, mult, shift) != ref) ++mismatches;
        if (requantize_out_fast(acc, mult, shift, 7, 255) != requantize_out(acc, mult, shift, 7, 255)) ++mismatches;
        const Int64Requantize r = Int64Requantize::of(mult, shift);
        if (r.exact && fits_int64_requantize(acc) && r.apply(acc) != ref) ++mismatches;
        if (print) {
            std::printf("%lld %d %d %lld\n", static_cast<long long>(acc), mult, shift, static_cast<long long>(ref));
        }
    };
    for (int64_t acc : edges)
        for (int32_t mult : mults)
            for (int32_t shift = -31; shift <= 40; ++shift) check(acc, mult, shift, true);
    for (long i = 0; i < count; ++i) {
        const int bits = static_cast<int>(rng() % 63);  // accumulators of every magnitude below 2^62
        int64_t acc = static_cast<int64_t>(rng() & ((uint64_t{1} << bits) - 1));
        if (rng() & 1) acc = -acc;
        if (rng() % 8 == 0) acc = (rng() & 1 ? 1 : -1) * (two31 - 1 - static_cast<int64_t>(rng() % 4));
        const int32_t mult = rng() % 16 == 0 ? 0 : static_cast<int32_t>((int64_t{1} << 30) + rng() % (int64_t{1} << 30));
        const int32_t shift = static_cast<int32_t>(rng() % 72) - 31;  // t = 31 + shift in [0, 71]
        check(acc, mult, shift, i % 97 == 0);
    }
    std::printf("mismatches %ld\n", mismatches);
    return mismatches == 0 ? 0 : 1;
}
