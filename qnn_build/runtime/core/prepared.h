// Arrays a kernel's prepare derives from the graph alone (the npu's requantization tables, ...):
// computed once at finalize and written into the context binary, which hands them back at load so
// that bind does not compute them again (docs/context-binary.md, "Prepared arrays").
//
// Only arrays whose every value is a valid datum go here (an output code, a weight), never an index
// or a shift count: a file that passes the checksum still cannot steer a kernel out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qnnb {

// A read-only array owned by the graph (computed) or by the loaded file.
template <class T> struct ArrayView {
    const T* ptr = nullptr;
    size_t count = 0;
    bool empty() const { return count == 0; }
    size_t size() const { return count; }
    const T* data() const { return ptr; }
    const T& operator[](size_t i) const { return ptr[i]; }
};

class PreparedArrays {
public:
    struct Entry {
        uint32_t node = 0, slot = 0;  // the node's index in the schedule; the kernel's number for the array
        const uint8_t* data = nullptr;
        uint64_t size = 0;  // bytes
    };

    PreparedArrays() = default;
    PreparedArrays(const PreparedArrays&) = delete;
    PreparedArrays& operator=(const PreparedArrays&) = delete;
    ~PreparedArrays();

    // Array `slot` of the node being prepared, `count` elements: the context binary's copy when it
    // holds one, else fill(T*) computes it into zeroed memory the graph keeps. A held copy of
    // another size is a refusal: error() says which, and the array is computed anyway.
    template <class T, class Fill> ArrayView<T> get(uint32_t slot, size_t count, Fill&& fill) {
        const size_t bytes = count * sizeof(T);
        if (const void* held = find(slot, bytes)) return {static_cast<const T*>(held), count};
        T* out = static_cast<T*>(own(slot, bytes));
        fill(out);
        return {out, count};
    }

    void begin_node(uint32_t node) { node_ = node; }
    const std::string& error() const { return error_; }
    // Every array handed out so far, in (node, slot) order: what the writer serializes.
    std::vector<Entry> handed_out() const;
    // The arrays of a context binary (checked by its reader: sorted, unique, inside the file).
    void hold(std::vector<Entry> entries) { held_ = std::move(entries); }
    void clear();

private:
    const void* find(uint32_t slot, size_t bytes);
    void* own(uint32_t slot, size_t bytes);

    uint32_t node_ = 0;
    std::vector<Entry> held_;       // from the file, sorted by (node, slot)
    std::vector<Entry> handed_;     // in the order handed out
    std::vector<void*> owned_;      // computed arrays' memory
    std::string error_;
};

}  // namespace qnnb
