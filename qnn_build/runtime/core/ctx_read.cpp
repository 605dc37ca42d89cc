// The context binary reader: checks the untrusted file (size, magic, version, checksum, backend,
// target, every section, offset, count and id) and fills a graph whose constants point in place
// into the file's bytes. Each failure names the check; nothing here allocates from an unchecked
// count, reads past a bound, or aborts.
#include <cstring>
#include <algorithm>

#include "checksum.h"
#include "ctx_format.h"
#include "graph_impl.h"
#include "quant.h"

namespace qnnb {
namespace {

constexpr int64_t kMaxElements = int64_t(1) << 40;  // beyond any tensor a host can hold

class ByteReader {
public:
    ByteReader(const uint8_t* p, size_t n, const char* section) : p_(p), n_(n), section_(section) {}
    bool ok = true;
    std::string err;

    bool fail(const std::string& what) {
        if (ok) err = std::string(section_) + " section: " + what + " (at byte " + std::to_string(pos_) + ")";
        ok = false;
        return false;
    }
    template <class T> bool get(T& v) {
        if (!ok || n_ - pos_ < sizeof(T)) return fail("truncated record");
        std::memcpy(&v, p_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return true;
    }
    bool str(std::string& s) {
        uint32_t len = 0;
        if (!get(len)) return false;
        if (len > n_ - pos_) return fail("string of " + std::to_string(len) + " bytes runs past the section");
        s.assign(reinterpret_cast<const char*>(p_ + pos_), len);
        pos_ += len;
        return true;
    }
    template <class T> bool array(std::vector<T>& v) {
        uint32_t count = 0;
        if (!get(count)) return false;
        if (count > (n_ - pos_) / sizeof(T)) return fail("array of " + std::to_string(count) + " runs past the section");
        v.resize(count);
        if (count) std::memcpy(v.data(), p_ + pos_, count * sizeof(T));
        pos_ += count * sizeof(T);
        return true;
    }
    bool at_end() const { return pos_ == n_; }

private:
    const uint8_t* p_;
    size_t n_;
    size_t pos_ = 0;
    const char* section_;
};

// A dtype code from the file, checked before it becomes a qnnb_dtype (an enum may not hold others).
bool valid_dtype(uint32_t d) {
    switch (d) {
        case QNNB_FLOAT32: case QNNB_UINT8: case QNNB_INT8: case QNNB_UINT16: case QNNB_INT16: case QNNB_INT32:
        case QNNB_INT64: case QNNB_BOOL: case QNNB_FLOAT16: case QNNB_INT4: return true;
    }
    return false;
}

std::string field(const char* s, size_t cap) { return std::string(s, strnlen(s, cap)); }

bool read_tensor(ByteReader& r, const uint8_t* data, uint64_t data_size, Tensor& t) {
    uint32_t dtype = 0, flags = 0, kind = 0, is_signed = 0;
    uint64_t offset = 0, size = 0;
    if (!r.str(t.name) || !r.get(dtype) || !r.array(t.shape) || !r.get(flags) || !r.get(offset) || !r.get(size))
        return false;
    if (!valid_dtype(dtype)) return r.fail("tensor '" + t.name + "': unknown dtype " + std::to_string(dtype));
    t.dtype = static_cast<qnnb_dtype>(dtype);
    if (t.shape.size() > QNNB_MAX_RANK) return r.fail("tensor '" + t.name + "': rank above " + std::to_string(QNNB_MAX_RANK));
    int64_t numel = 1;
    for (int64_t d : t.shape) {
        // each dim bounded too: after a 0 dim the product no longer limits the others
        if (d < 0 || d > kMaxElements || (d > 0 && numel > kMaxElements / d))
            return r.fail("tensor '" + t.name + "': bad dimension");
        numel *= d;
    }
    if (flags > 1) return r.fail("tensor '" + t.name + "': bad flags");
    if (flags == 1) {
        if (size != t.nbytes()) return r.fail("tensor '" + t.name + "': data size does not match its shape");
        if (offset % kCtxAlign != 0 || offset > data_size || size > data_size - offset)
            return r.fail("tensor '" + t.name + "': data outside the data section");
        t.const_data = data + offset;
        if (size == 0) t.const_data = data;  // an empty constant still is a constant
    }
    Encoding& e = t.encoding;
    if (!r.get(kind) || !r.get(e.bitwidth) || !r.get(is_signed) || !r.get(e.axis) || !r.get(e.block_axis) ||
        !r.get(e.block_size) || !r.array(e.scales) || !r.array(e.offsets))
        return false;
    if (kind > QNNB_ENCODING_FP16 || is_signed > 1) return r.fail("tensor '" + t.name + "': bad encoding");
    e.kind = static_cast<qnnb_encoding_kind>(kind);
    e.is_signed = is_signed != 0;
    std::string err;
    if (e.present() && !check_encoding(t, err)) return r.fail("tensor '" + t.name + "': " + err);
    return true;
}

bool tensor_ref(ByteReader& r, qnnb_graph* g, int32_t id, bool optional, Tensor*& out) {
    out = nullptr;
    if (optional && id == -1) return true;
    if (id < 0 || static_cast<size_t>(id) >= g->tensors.size()) return r.fail("tensor id " + std::to_string(id) + " out of range");
    out = g->tensors[static_cast<size_t>(id)].get();
    return true;
}

// The tensor ids the schedule reads and writes, in node order, kept while reading: the checks after
// it index by id instead of mapping pointers back to ids.
struct ScheduleIds {
    std::vector<int32_t> reads, writes;          // every node's, concatenated (-1: absent)
    std::vector<size_t> reads_end, writes_end;   // per node: where its ids end
    std::vector<int32_t> inputs, outputs;        // the graph's
};

bool read_node(ByteReader& r, qnnb_graph* g, Node& n, ScheduleIds& ids) {
    if (!r.str(n.name) || !r.str(n.op)) return false;
    for (auto* list : {&n.in, &n.out}) {
        std::vector<int32_t>& all = list == &n.in ? ids.reads : ids.writes;
        const size_t from = all.size();
        uint32_t count = 0;
        if (!r.get(count)) return false;
        for (uint32_t i = 0; i < count; ++i) {
            int32_t id = 0;
            Tensor* t = nullptr;
            if (!r.get(id) || !tensor_ref(r, g, id, true, t)) return false;
            if (list == &n.out && t && t->is_const()) return r.fail("node '" + n.name + "' writes a constant");
            all.push_back(id);
        }
        list->reserve(count);
        for (size_t i = from; i < all.size(); ++i) list->push_back(all[i] < 0 ? nullptr : g->tensors[all[i]].get());
    }
    ids.reads_end.push_back(ids.reads.size());
    ids.writes_end.push_back(ids.writes.size());
    if (n.out.empty()) return r.fail("node '" + n.name + "' has no outputs");
    uint32_t count = 0;
    if (!r.get(count)) return false;
    for (uint32_t i = 0; i < count; ++i) {
        std::string name;
        uint32_t kind = 0;
        Param p;
        if (!r.str(name) || !r.get(kind)) return false;
        if (kind == QNNB_PARAM_INTS) { if (!r.array(p.ints)) return false; }
        else if (kind == QNNB_PARAM_FLOATS) { if (!r.array(p.floats)) return false; }
        else if (kind == QNNB_PARAM_STRING) { if (!r.str(p.str)) return false; }
        else return r.fail("node '" + n.name + "': bad parameter kind");
        p.kind = static_cast<qnnb_param_kind>(kind);
        n.params.set(name, std::move(p));
    }
    return true;
}

// Every activation is written (or fed as a graph input) before a node or the graph's outputs read it.
bool check_schedule(ByteReader& r, qnnb_graph* g, const ScheduleIds& ids) {
    std::vector<char> ready(g->tensors.size(), 0);
    for (int32_t id : ids.inputs) ready[id] = 1;
    size_t read = 0, written = 0;
    for (size_t k = 0; k < g->nodes.size(); ++k) {
        for (; read < ids.reads_end[k]; ++read) {
            const int32_t id = ids.reads[read];
            if (id >= 0 && !g->tensors[id]->is_const() && !ready[id])
                return r.fail("node '" + g->nodes[k]->name + "' reads '" + g->tensors[id]->name +
                              "' before it is written");
        }
        for (; written < ids.writes_end[k]; ++written)
            if (ids.writes[written] >= 0) ready[ids.writes[written]] = 1;
    }
    for (int32_t id : ids.outputs)
        if (!g->tensors[id]->is_const() && !ready[id])
            return r.fail("output '" + g->tensors[id]->name + "' is never written");
    return true;
}

bool read_graph(ByteReader& r, qnnb_graph* g, const uint8_t* data, uint64_t data_size, ScheduleIds& ids) {
    uint32_t count = 0;
    if (!r.get(count)) return false;
    for (uint32_t i = 0; i < count && r.ok; ++i) {
        auto t = std::make_unique<Tensor>();
        if (!read_tensor(r, data, data_size, *t)) return false;
        g->tensors.push_back(std::move(t));
    }
    if (!r.get(count)) return false;
    for (uint32_t i = 0; i < count && r.ok; ++i) {
        auto n = std::make_unique<Node>();
        if (!read_node(r, g, *n, ids)) return false;
        g->nodes.push_back(std::move(n));
    }
    if (!r.get(count)) return false;
    for (uint32_t i = 0; i < count; ++i) {
        int32_t id = 0;
        uint32_t dtype = 0;
        Tensor* t = nullptr;
        if (!r.get(id) || !r.get(dtype) || !tensor_ref(r, g, id, false, t)) return false;
        if (t->is_const()) return r.fail("graph input '" + t->name + "' is a constant");
        if (!valid_dtype(dtype)) return r.fail("input dtype " + std::to_string(dtype) + " unknown");
        ids.inputs.push_back(id);
        g->inputs.push_back(t);
        g->input_dtypes.push_back(static_cast<qnnb_dtype>(dtype));
    }
    if (!r.get(count)) return false;
    if (count == 0) return r.fail("the graph has no outputs");
    for (uint32_t i = 0; i < count; ++i) {
        int32_t id = 0;
        uint32_t dtype = 0;
        Tensor* t = nullptr;
        if (!r.get(id) || !r.get(dtype) || !tensor_ref(r, g, id, false, t)) return false;
        if (!valid_dtype(dtype)) return r.fail("output dtype " + std::to_string(dtype) + " unknown");
        ids.outputs.push_back(id);
        g->outputs.push_back(t);
        g->output_dtypes.push_back(static_cast<qnnb_dtype>(dtype));
    }
    if (!r.at_end()) return r.fail("bytes left after the graph");
    return check_schedule(r, g, ids);
}

// Every activation a node writes must have arena bytes of its own size inside the arena.
bool read_plan(ByteReader& r, qnnb_graph* g, const ScheduleIds& ids) {
    uint64_t arena = 0, total = 0;
    if (!r.get(arena) || !r.get(total) || !r.array(g->arena_offsets)) return false;
    if (g->arena_offsets.size() != g->tensors.size()) return r.fail("plan does not cover every tensor");
    uint64_t sum = 0;
    for (size_t i = 0; i < g->tensors.size(); ++i) {
        int64_t off = g->arena_offsets[i];
        const Tensor& t = *g->tensors[i];
        if (off == -1) continue;
        uint64_t size = (t.nbytes() + 63) / 64 * 64;
        if (t.is_const() || off < 0 || off % 64 != 0 || static_cast<uint64_t>(off) > arena || size > arena - off)
            return r.fail("tensor '" + t.name + "' lies outside the arena");
        sum += size;
    }
    if (sum != total || arena > total) return r.fail("arena size does not match the plan");
    for (int32_t id : ids.writes)
        if (id >= 0 && g->arena_offsets[id] < 0)
            return r.fail("tensor '" + g->tensors[id]->name + "' has no arena bytes");
    g->arena_bytes = arena;
    g->tensor_bytes = total;
    return r.at_end() || r.fail("bytes left after the plan");
}

// The prepared arrays: sorted by (node, slot) without repeats, each inside the section, aligned, and
// after the entry table. Which arrays a kernel takes, and their sizes, bind checks (core/prepared.h).
bool read_prepared(ByteReader& r, qnnb_graph* g, const uint8_t* section, uint64_t size) {
    uint32_t count = 0, reserved = 0;
    if (!r.get(count) || !r.get(reserved)) return false;
    if (count > (size - 8) / sizeof(CtxPrepared)) return r.fail("table of " + std::to_string(count) + " runs past the section");
    const uint64_t arrays_from = 8 + uint64_t{count} * sizeof(CtxPrepared);
    std::vector<PreparedArrays::Entry> held;
    held.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
        CtxPrepared e;
        if (!r.get(e)) return false;
        if (e.node >= g->nodes.size()) return r.fail("prepared array for node " + std::to_string(e.node) + " out of range");
        if (!held.empty() && (e.node < held.back().node || (e.node == held.back().node && e.slot <= held.back().slot)))
            return r.fail("prepared arrays out of order");
        if (e.offset % kCtxAlign != 0 || e.offset < arrays_from || e.offset > size || e.size > size - e.offset)
            return r.fail("prepared array outside the section");
        held.push_back({e.node, e.slot, section + e.offset, e.size});
    }
    g->prepared.hold(std::move(held));
    return true;
}

}  // namespace

// Fills an empty graph from a context binary's bytes (which must outlive it). False: `err` says
// which check failed; the graph is then to be discarded.
bool read_context(qnnb_graph* g, const uint8_t* bytes, size_t size, std::string& err);

bool read_context(qnnb_graph* g, const uint8_t* bytes, size_t size, std::string& err) {
    CtxHeader h;
    if (size < sizeof(h)) {
        err = "truncated: the file has " + std::to_string(size) + " bytes, the header alone needs " +
              std::to_string(sizeof(h));
        return false;
    }
    std::memcpy(&h, bytes, sizeof(h));
    if (std::memcmp(h.magic, kCtxMagic, sizeof(h.magic)) != 0) {
        err = "not a qnn-build context binary (bad magic)";
        return false;
    }
    if (h.format_version != kCtxFormatVersion) {
        err = "format version " + std::to_string(h.format_version) +
              (h.format_version > kCtxFormatVersion ? " is newer than" : " is not supported by") +
              " this runtime's " + std::to_string(kCtxFormatVersion);
        return false;
    }
    if (h.header_size != sizeof(h)) {
        err = "bad header size " + std::to_string(h.header_size);
        return false;
    }
    if (h.file_size != size) {
        err = std::string(size < h.file_size ? "truncated" : "file size mismatch") + ": the header says " +
              std::to_string(h.file_size) + " bytes, the file has " + std::to_string(size);
        return false;
    }
    uint64_t sum = xxh3_64(bytes + kCtxChecksummedFrom, size - kCtxChecksummedFrom);
    if (sum != h.checksum) {
        err = "checksum mismatch: the file is corrupted";
        return false;
    }
    std::string backend = field(h.backend, sizeof(h.backend));
    if (backend != g->backend->name) {
        err = "backend '" + backend + "' context used on backend '" + g->backend->name + "'";
        return false;
    }
    std::string version = field(h.backend_version, sizeof(h.backend_version));
    if (version != QNNB_RUNTIME_VERSION) {
        err = "built by runtime " + version + ", this runtime is " + QNNB_RUNTIME_VERSION;
        return false;
    }
    std::string target = field(h.target, sizeof(h.target)), ours = runtime_target();
    if (target != ours) {
        // Another machine altogether, or this one's arch and OS with ISA features the host lacks.
        const bool same_machine = target.substr(0, target.find('+')) == ours.substr(0, ours.find('+'));
        std::string missing = same_machine ? host_missing_features(target) : "";
        err = "built for " + target + (missing.empty() ? ", this runtime targets " + ours : ", this host lacks " + missing);
        return false;
    }
    if (h.section_count == 0 || h.section_count > kCtxMaxSections ||
        sizeof(h) + h.section_count * sizeof(CtxSection) > size) {
        err = "bad section count " + std::to_string(h.section_count);
        return false;
    }
    const CtxSection* found[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
    std::vector<CtxSection> table(h.section_count);
    std::memcpy(table.data(), bytes + sizeof(h), table.size() * sizeof(CtxSection));
    for (const CtxSection& s : table) {
        const std::string name = std::string("section '") + section_name(s.id) + "'";
        if (s.id < kSectionGraph || s.id > kSectionPrepared || found[s.id]) {
            err = "bad or repeated section id " + std::to_string(s.id);
            return false;
        }
        if (s.offset % kCtxAlign != 0 || s.offset < sizeof(h) || s.offset > size || s.size > size - s.offset) {
            err = "truncated: " + name + " ends at " + std::to_string(s.offset + s.size) + " beyond file size " +
                  std::to_string(size);
            return false;
        }
        found[s.id] = &s;
    }
    for (uint32_t id = kSectionGraph; id <= kSectionData; ++id)  // the prepared section is optional
        if (!found[id]) {
            err = std::string("section '") + section_name(id) + "' is missing";
            return false;
        }
    const CtxSection &gs = *found[kSectionGraph], &ps = *found[kSectionPlan], &ds = *found[kSectionData];
    ByteReader graph(bytes + gs.offset, gs.size, "graph"), plan(bytes + ps.offset, ps.size, "plan");
    ScheduleIds ids;
    if (!read_graph(graph, g, bytes + ds.offset, ds.size, ids)) {
        err = graph.err;
        return false;
    }
    if (!read_plan(plan, g, ids)) {
        err = plan.err;
        return false;
    }
    if (const CtxSection* s = found[kSectionPrepared]) {
        ByteReader prepared(bytes + s->offset, s->size, "prepared");
        if (!read_prepared(prepared, g, bytes + s->offset, s->size)) {
            err = prepared.err;
            return false;
        }
    }
    return true;
}

}  // namespace qnnb
