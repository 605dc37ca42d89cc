// The context binary writer: a finalized graph -> header, section table, graph/plan/data/prepared sections
// (layout: ctx_format.h, docs/context-binary.md). No pointers, times or padding garbage are
// written, so the same graph gives the same bytes.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>

#include "checksum.h"
#include "ctx_format.h"
#include "graph_impl.h"

namespace qnnb {
namespace {

class ByteWriter {
public:
    std::vector<uint8_t> bytes;
    template <class T> void put(T v) {
        const uint8_t* p = reinterpret_cast<const uint8_t*>(&v);
        bytes.insert(bytes.end(), p, p + sizeof(T));
    }
    void str(const std::string& s) {
        put<uint32_t>(static_cast<uint32_t>(s.size()));
        bytes.insert(bytes.end(), s.begin(), s.end());
    }
    template <class T> void array(const std::vector<T>& v) {
        put<uint32_t>(static_cast<uint32_t>(v.size()));
        for (const T& x : v) put<T>(x);
    }
    void align() { bytes.resize((bytes.size() + kCtxAlign - 1) / kCtxAlign * kCtxAlign, 0); }
};

void write_tensor(ByteWriter& w, const Tensor& t, uint64_t data_offset) {
    w.str(t.name);
    w.put<uint32_t>(static_cast<uint32_t>(t.dtype));
    w.array(t.shape);
    w.put<uint32_t>(t.is_const() ? 1u : 0u);
    w.put<uint64_t>(t.is_const() ? data_offset : 0);
    w.put<uint64_t>(t.is_const() ? t.nbytes() : 0);
    const Encoding& e = t.encoding;
    w.put<uint32_t>(static_cast<uint32_t>(e.kind));
    w.put<int32_t>(e.bitwidth);
    w.put<uint32_t>(e.is_signed ? 1u : 0u);
    w.put<int32_t>(e.axis);
    w.put<int32_t>(e.block_axis);
    w.put<int32_t>(e.block_size);
    w.array(e.scales);
    w.array(e.offsets);
}

void write_node(ByteWriter& w, const Node& n, const std::map<const Tensor*, int32_t>& ids) {
    w.str(n.name);
    w.str(n.op);
    for (const auto* list : {&n.in, &n.out}) {
        w.put<uint32_t>(static_cast<uint32_t>(list->size()));
        for (const Tensor* t : *list) w.put<int32_t>(t ? ids.at(t) : -1);
    }
    w.put<uint32_t>(static_cast<uint32_t>(n.params.all().size()));
    for (const auto& [name, p] : n.params.all()) {
        w.str(name);
        w.put<uint32_t>(static_cast<uint32_t>(p.kind));
        if (p.kind == QNNB_PARAM_INTS) w.array(p.ints);
        else if (p.kind == QNNB_PARAM_FLOATS) w.array(p.floats);
        else w.str(p.str);
    }
}

// The kernels' prepared arrays, equal arrays stored once. Only for this runtime's own target: another
// target's kernels may want other arrays, so its runtime computes them at load.
ByteWriter prepared_section(const qnnb_graph* g) {
    const std::vector<PreparedArrays::Entry> entries = g->prepared.handed_out();
    ByteWriter w;
    w.put<uint32_t>(static_cast<uint32_t>(entries.size()));
    w.put<uint32_t>(0);
    const size_t table_at = w.bytes.size();
    w.bytes.resize(table_at + entries.size() * sizeof(CtxPrepared), 0);
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> stored;  // (size, XXH3) -> offset
    for (size_t i = 0; i < entries.size(); ++i) {
        const PreparedArrays::Entry& e = entries[i];
        const auto key = std::make_pair(e.size, xxh3_64(e.data, e.size));
        auto it = stored.find(key);
        if (it == stored.end() || std::memcmp(w.bytes.data() + it->second, e.data, e.size) != 0) {
            w.align();
            it = stored.insert_or_assign(key, w.bytes.size()).first;
            w.bytes.insert(w.bytes.end(), e.data, e.data + e.size);
        }
        const CtxPrepared record = {e.node, e.slot, it->second, e.size};
        std::memcpy(w.bytes.data() + table_at + i * sizeof(CtxPrepared), &record, sizeof(record));
    }
    return w;
}

void copy_name(char* dst, size_t cap, const std::string& s) {
    std::memset(dst, 0, cap);
    std::memcpy(dst, s.data(), std::min(s.size(), cap - 1));
}

}  // namespace

qnnb_status serialize_graph(qnnb_graph* g, const std::string& target, std::vector<uint8_t>& out) {
    std::map<const Tensor*, int32_t> ids;
    for (size_t i = 0; i < g->tensors.size(); ++i) ids[g->tensors[i].get()] = static_cast<int32_t>(i);

    ByteWriter data;  // constants, each at a 64-byte aligned offset within the section
    std::vector<uint64_t> data_offsets(g->tensors.size(), 0);
    for (size_t i = 0; i < g->tensors.size(); ++i) {
        const Tensor& t = *g->tensors[i];
        if (!t.is_const()) continue;
        data.align();
        data_offsets[i] = data.bytes.size();
        const uint8_t* p = static_cast<const uint8_t*>(t.const_data);
        data.bytes.insert(data.bytes.end(), p, p + t.nbytes());
    }

    ByteWriter graph;
    graph.put<uint32_t>(static_cast<uint32_t>(g->tensors.size()));
    for (size_t i = 0; i < g->tensors.size(); ++i) write_tensor(graph, *g->tensors[i], data_offsets[i]);
    graph.put<uint32_t>(static_cast<uint32_t>(g->nodes.size()));
    for (const auto& n : g->nodes) write_node(graph, *n, ids);
    graph.put<uint32_t>(static_cast<uint32_t>(g->inputs.size()));
    for (size_t i = 0; i < g->inputs.size(); ++i) {
        graph.put<int32_t>(ids.at(g->inputs[i]));
        graph.put<uint32_t>(static_cast<uint32_t>(g->input_dtypes[i]));
    }
    graph.put<uint32_t>(static_cast<uint32_t>(g->outputs.size()));
    for (size_t i = 0; i < g->outputs.size(); ++i) {
        graph.put<int32_t>(ids.at(g->outputs[i]));
        graph.put<uint32_t>(static_cast<uint32_t>(g->output_dtypes[i]));
    }

    ByteWriter plan;
    plan.put<uint64_t>(g->arena_bytes);
    plan.put<uint64_t>(g->tensor_bytes);
    plan.array(g->arena_offsets);

    const int count = target == runtime_target() ? 4 : 3;
    const ByteWriter prepared = count == 4 ? prepared_section(g) : ByteWriter();
    const ByteWriter* sections[] = {&graph, &plan, &data, &prepared};
    const uint32_t section_ids[] = {kSectionGraph, kSectionPlan, kSectionData, kSectionPrepared};
    ByteWriter file;
    file.bytes.resize(sizeof(CtxHeader) + count * sizeof(CtxSection), 0);
    std::vector<CtxSection> table;
    for (int k = 0; k < count; ++k) {
        file.align();
        table.push_back({section_ids[k], 0, file.bytes.size(), sections[k]->bytes.size()});
        file.bytes.insert(file.bytes.end(), sections[k]->bytes.begin(), sections[k]->bytes.end());
    }
    file.align();

    CtxHeader h;
    std::memset(&h, 0, sizeof(h));
    std::memcpy(h.magic, kCtxMagic, sizeof(h.magic));
    h.format_version = kCtxFormatVersion;
    h.header_size = sizeof(CtxHeader);
    h.file_size = file.bytes.size();
    copy_name(h.backend, sizeof(h.backend), g->backend->name);
    copy_name(h.backend_version, sizeof(h.backend_version), QNNB_RUNTIME_VERSION);
    copy_name(h.target, sizeof(h.target), target);
    h.section_count = static_cast<uint32_t>(table.size());
    std::memcpy(file.bytes.data(), &h, sizeof(h));
    std::memcpy(file.bytes.data() + sizeof(h), table.data(), table.size() * sizeof(CtxSection));
    h.checksum = xxh3_64(file.bytes.data() + kCtxChecksummedFrom, file.bytes.size() - kCtxChecksummedFrom);
    std::memcpy(file.bytes.data() + offsetof(CtxHeader, checksum), &h.checksum, sizeof(h.checksum));
    out.swap(file.bytes);
    return QNNB_OK;
}

}  // namespace qnnb

extern "C" QNNB_EXPORT qnnb_status qnnb_graph_serialize_for(qnnb_graph* g, const char* target, void** out_data,
                                                           size_t* out_size) {
    if (!g || !out_data || !out_size) return QNNB_ERR_INVALID_ARGUMENT;
    *out_data = nullptr;
    *out_size = 0;
    if (!g->finalized) return g->fail(QNNB_ERR_STATE, "serialize before finalize");
    const std::string where = target ? target : qnnb::runtime_target();
    if (where.empty() || where.size() >= sizeof(qnnb::CtxHeader::target))
        return g->fail(QNNB_ERR_INVALID_ARGUMENT, "context target '" + where + "' is empty or too long");
    std::vector<uint8_t> bytes;
    qnnb_status s = qnnb::serialize_graph(g, where, bytes);
    if (s != QNNB_OK) return s;
    void* buf = std::malloc(bytes.size());
    if (!buf) return g->fail(QNNB_ERR_OUT_OF_MEMORY, "out of memory for the context binary");
    std::memcpy(buf, bytes.data(), bytes.size());
    *out_data = buf;
    *out_size = bytes.size();
    return QNNB_OK;
}

extern "C" QNNB_EXPORT qnnb_status qnnb_graph_serialize(qnnb_graph* g, void** out_data, size_t* out_size) {
    return qnnb_graph_serialize_for(g, nullptr, out_data, out_size);
}

extern "C" QNNB_EXPORT void qnnb_buffer_free(void* data) { std::free(data); }
