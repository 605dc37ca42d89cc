#include "prepared.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <tuple>

#include "graph_impl.h"

namespace qnnb {
namespace {

bool before(const PreparedArrays::Entry& a, const PreparedArrays::Entry& b) {
    return std::tie(a.node, a.slot) < std::tie(b.node, b.slot);
}

}  // namespace

PreparedArrays::~PreparedArrays() { clear(); }

void PreparedArrays::clear() {
    for (void* p : owned_) aligned_free64(p);
    owned_.clear();
    held_.clear();
    handed_.clear();
    error_.clear();
}

const void* PreparedArrays::find(uint32_t slot, size_t bytes) {
    Entry key;
    key.node = node_;
    key.slot = slot;
    for (auto e = handed_.rbegin(); e != handed_.rend() && e->node == node_; ++e)
        if (e->slot == slot && error_.empty())
            error_ = "prepared array " + std::to_string(slot) + " asked for twice";  // a kernel's bug
    auto it = std::lower_bound(held_.begin(), held_.end(), key, before);
    if (it == held_.end() || it->node != node_ || it->slot != slot) return nullptr;  // not held: computed
    if (it->size != bytes) {
        if (error_.empty())
            error_ = "prepared array " + std::to_string(slot) + " has " + std::to_string(it->size) +
                     " bytes in the context binary, the kernel takes " + std::to_string(bytes);
        return nullptr;
    }
    handed_.push_back(*it);
    return it->data;
}

void* PreparedArrays::own(uint32_t slot, size_t bytes) {
    void* p = aligned_alloc64(bytes);
    if (!p) throw std::bad_alloc();  // as the std::vector the kernels used before would
    std::memset(p, 0, (bytes + 63) / 64 * 64);
    owned_.push_back(p);
    Entry e;
    e.node = node_;
    e.slot = slot;
    e.data = static_cast<const uint8_t*>(p);
    e.size = bytes;
    handed_.push_back(e);
    return p;
}

std::vector<PreparedArrays::Entry> PreparedArrays::handed_out() const {
    std::vector<Entry> out = handed_;
    std::stable_sort(out.begin(), out.end(), before);
    return out;
}

}  // namespace qnnb
