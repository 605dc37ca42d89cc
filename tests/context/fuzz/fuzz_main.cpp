// A driver for fuzz_context.cpp without libFuzzer (g++ with -fsanitize=address,undefined):
//   walk SEED           every truncation and every single-byte flip (x ^ 0xFF, x ^ 0x01) of SEED
//   fuzz SEED SECONDS   random mutations of SEED (flips, truncations, insertions, overwrites) for
//                       a bounded time; a fixed seed, so a failure reproduces
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s walk|fuzz SEED [SECONDS]\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[2], std::ios::binary);
    std::vector<uint8_t> seed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (seed.empty()) return 2;
    long runs = 0;
    if (std::string(argv[1]) == "walk") {
        for (size_t n = 0; n <= seed.size(); ++n, ++runs) LLVMFuzzerTestOneInput(seed.data(), n);
        for (size_t i = 0; i < seed.size(); ++i)
            for (uint8_t mask : {uint8_t(0xFF), uint8_t(0x01)}) {
                std::vector<uint8_t> v = seed;
                v[i] ^= mask;
                LLVMFuzzerTestOneInput(v.data(), v.size());
                ++runs;
            }
    } else {
        double seconds = argc > 3 ? std::atof(argv[3]) : 10.0;
        std::mt19937_64 rng(12345);
        auto start = std::chrono::steady_clock::now();
        while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
            std::vector<uint8_t> v = seed;
            int edits = 1 + static_cast<int>(rng() % 8);
            for (int e = 0; e < edits && !v.empty(); ++e) {
                size_t at = rng() % v.size();
                switch (rng() % 5) {
                    case 0: v[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
                    case 1: v[at] = static_cast<uint8_t>(rng()); break;
                    case 2: v.resize(at); break;
                    case 3: v.insert(v.begin() + static_cast<long>(at), static_cast<uint8_t>(rng())); break;
                    default:  // a 32-bit field set to an extreme (counts, sizes, ids)
                        if (at + 4 <= v.size()) {
                            static const uint32_t kVals[] = {0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 64, 255};
                            uint32_t x = kVals[rng() % 7];
                            std::memcpy(v.data() + at, &x, 4);
                        }
                }
            }
            LLVMFuzzerTestOneInput(v.data(), v.size());
            ++runs;
        }
    }
    std::printf("%ld inputs, no crash\n", runs);
    return 0;
}
