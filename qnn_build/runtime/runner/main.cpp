// qnn-net-run --model libmodel.so|model.dll | --retrieve_context model.ctx  --backend cpu|npu
//             --input_list FILE --output_dir DIR [--num_inferences N] [--profiling_level basic|detailed]
//             [--threads N] [--use_native_input_files] [--use_native_output_files] [--input_layout NHWC]
// The flags of `qnn-build net-run` (dashes or underscores); the same Result_N outputs.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "runner.h"

namespace runner {
namespace {

const char* kUsage =
    "usage: qnn-net-run --model LIB | --retrieve_context CTX --input_list FILE --output_dir DIR\n"
    "                   [--backend cpu|npu]\n"
    "                   [--num_inferences N] [--profiling_level basic|detailed] [--threads N]\n"
    "                   [--use_native_input_files] [--use_native_output_files] [--input_layout NCHW|NHWC]\n";

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// A count flag's value: a whole number, 1 or more.
long at_least_one(const char* flag, const std::string& text) {
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE)
        throw Error(std::string("--") + flag + ": '" + text + "' is not a whole number");
    if (value < 1) throw Error(std::string("--") + flag + " must be at least 1, not " + text);
    return value;
}

std::map<std::string, std::string> parse_args(int argc, char** argv) {
    static const char* kFlags[] = {"model", "retrieve_context", "backend", "input_list", "output_dir",
                                   "num_inferences", "profiling_level", "threads", "input_layout"};
    static const char* kSwitches[] = {"use_native_input_files", "use_native_output_files"};  // no value
    std::map<std::string, std::string> args = {{"backend", "cpu"}, {"threads", "1"}};
    for (int i = 1; i < argc; ++i) {
        std::string flag = argv[i];
        if (flag == "--help" || flag == "-h" || flag == "--version") return {{flag.substr(flag.rfind('-') + 1), ""}};
        if (flag.rfind("--", 0) != 0) throw Error("unexpected argument '" + flag + "'\n" + kUsage);
        flag = flag.substr(2);
        for (char& c : flag)
            if (c == '-') c = '_';
        bool known = false, is_switch = false;
        for (const char* f : kSwitches) is_switch = is_switch || flag == f;
        if (is_switch) {
            args[flag] = "1";
            continue;
        }
        for (const char* f : kFlags) known = known || flag == f;
        if (!known) throw Error("unknown option --" + flag + "\n" + kUsage);
        if (i + 1 >= argc) throw Error("--" + flag + " needs a value");
        args[flag] = argv[++i];
    }
    if (args.count("model") == args.count("retrieve_context"))
        throw Error("net-run needs --model or --retrieve_context (one of them)");
    for (const char* need : {"input_list", "output_dir"})
        if (!args.count(need)) throw Error(std::string("net-run needs --") + need);
    if (args.count("profiling_level") && args["profiling_level"] != "basic" && args["profiling_level"] != "detailed")
        throw Error("--profiling_level must be basic or detailed, not '" + args["profiling_level"] + "'");
    if (args.count("input_layout") && args["input_layout"] != "NCHW" && args["input_layout"] != "NHWC")
        throw Error("--input_layout must be NCHW or NHWC, not '" + args["input_layout"] + "'");
    for (const char* count : {"num_inferences", "threads"})
        if (args.count(count)) at_least_one(count, args[count]);
    return args;
}

struct Graph {
    qnnb_graph* g = nullptr;
    ~Graph() { qnnb_graph_free(g); }
    void check(qnnb_status s, const char* what) const {
        if (s != QNNB_OK)
            throw Error(std::string(what) + " failed (" + qnnb_status_string(s) + "): " + qnnb_graph_last_error(g));
    }
    std::vector<IOInfo> io(int is_output) const {
        std::vector<IOInfo> out;
        for (int32_t i = 0; i < qnnb_graph_num_io(g, is_output); ++i) {
            const char* name = nullptr;
            qnnb_dtype dtype;
            int32_t rank = 0;
            int64_t dims[QNNB_MAX_RANK];
            check(qnnb_graph_io(g, is_output, i, &name, &dtype, &rank, dims), "io query");
            out.push_back({name, dtype, std::vector<int64_t>(dims, dims + rank)});
        }
        return out;
    }
};

// The finalized schedule as profile.json names it: op type, fused op, output shapes.
std::vector<ProfiledNode> schedule(const Graph& g) {
    std::vector<ProfiledNode> nodes(static_cast<size_t>(qnnb_graph_num_nodes(g.g)));
    for (size_t i = 0; i < nodes.size(); ++i) {
        const char *name = nullptr, *op = nullptr, *fused = nullptr;
        int32_t count = 0;
        const int32_t index = static_cast<int32_t>(i);
        g.check(qnnb_graph_node(g.g, index, &name, &op, &fused, &count), "node query");
        nodes[i].name = name;
        nodes[i].op = op;
        nodes[i].fused = fused;
        for (int32_t k = 0; k < count; ++k) {
            int32_t tensor = -1, rank = 0;
            int64_t dims[QNNB_MAX_RANK];
            g.check(qnnb_graph_node_output(g.g, index, k, &tensor), "node query");
            if (tensor >= 0) g.check(qnnb_graph_tensor(g.g, tensor, nullptr, nullptr, &rank, dims, nullptr), "node query");
            nodes[i].outputs.emplace_back(dims, dims + rank);
        }
    }
    return nodes;
}

int run(int argc, char** argv) {
    auto args = parse_args(argc, argv);
    if (args.count("version")) {
        std::printf("qnn-net-run %s %s (%s)\npaths: %s\n", qnnb_runtime_version(), qnnb_runtime_target(),
                    qnnb_runtime_isa(), qnnb_runtime_paths());
        return 0;
    }
    if (args.count("help") || args.count("h")) {
        std::printf("%s", kUsage);
        return 0;
    }
    const std::string backend = args["backend"], list = args["input_list"], out_dir = args["output_dir"];
    const auto t0 = Clock::now();
    Graph g;
    if (qnnb_graph_create(backend.c_str(), &g.g) != QNNB_OK)
        throw Error("backend '" + backend + "' is not available in this runtime");
    g.check(qnnb_graph_set_threads(g.g, static_cast<int32_t>(at_least_one("threads", args["threads"]))), "set threads");
    Profile profile;  // load/compose/finalize or retrieve, then every execute (profile.cpp)
    profile.backend = backend;
    profile.level = args.count("profiling_level") ? args["profiling_level"] : "";
    auto& init_us = profile.init_us;
    if (args.count("retrieve_context")) {
        const std::string ctx = args["retrieve_context"];
        if (qnnb_graph_load_context_file(g.g, ctx.c_str()) != QNNB_OK)
            throw Error(ctx + ": " + qnnb_graph_last_error(g.g));
        init_us.push_back({"retrieve_us", us_since(t0)});
    } else {
        const qnnb_compose_fn compose = load_model_library(args["model"]);
        init_us.push_back({"load_us", us_since(t0)});
        const auto t1 = Clock::now();
        g.check(qnnb_graph_compose(g.g, compose), "compose");
        init_us.push_back({"compose_us", us_since(t1)});
        const auto t2 = Clock::now();
        g.check(qnnb_graph_finalize(g.g), "finalize");
        init_us.push_back({"finalize_us", us_since(t2)});
    }
    const bool native_in = args.count("use_native_input_files") != 0, native_out = args.count("use_native_output_files") != 0;
    g.check(qnnb_graph_set_native_io(g.g, native_in, native_out), "native io");
    const std::vector<IOInfo> inputs = g.io(0), outputs = g.io(1);
    const bool channel_last = args.count("input_layout") && args["input_layout"] == "NHWC";

    const std::vector<Run> runs = parse_input_list(list, inputs);
    // Read and check every input before running anything: a bad file fails before any output.
    std::vector<std::vector<std::vector<unsigned char>>> feeds;
    for (const Run& r : runs) {
        feeds.emplace_back();
        for (size_t k = 0; k < inputs.size(); ++k)
            feeds.back().push_back(channel_last ? read_raw_channel_last(r[k], inputs[k], list)
                                                : read_raw(r[k], inputs[k], list));
    }
    const long count = args.count("num_inferences") ? at_least_one("num_inferences", args["num_inferences"])
                                                    : static_cast<long>(runs.size());
    clear_previous_run(out_dir);
    std::vector<std::vector<unsigned char>> results(outputs.size());
    for (size_t k = 0; k < outputs.size(); ++k) results[k].resize(outputs[k].bytes());
    const bool detailed = profile.level == "detailed";
    if (detailed) {
        g.check(qnnb_graph_set_profiling(g.g, QNNB_PROFILING_DETAILED), "set profiling");
        profile.nodes = schedule(g);
    }
    std::vector<uint64_t> node_ns(profile.nodes.size());
    for (long n = 0; n < count; ++n) {
        std::vector<const void*> in_ptrs;
        for (const auto& f : feeds[static_cast<size_t>(n) % feeds.size()]) in_ptrs.push_back(f.data());
        std::vector<void*> out_ptrs;
        for (auto& r : results) out_ptrs.push_back(r.data());
        const auto t = Clock::now();
        g.check(qnnb_graph_execute(g.g, in_ptrs.data(), out_ptrs.data()), "execute");
        profile.execute_us.push_back(us_since(t));
        if (detailed) {
            g.check(qnnb_graph_node_times(g.g, node_ns.data(), static_cast<int32_t>(node_ns.size())), "node times");
            for (size_t i = 0; i < node_ns.size(); ++i) profile.nodes[i].time_us.push_back(static_cast<double>(node_ns[i]) / 1e3);
        }
        for (size_t k = 0; k < outputs.size(); ++k) {
            const auto bytes = native_out ? results[k] : to_float32(results[k].data(), outputs[k]);
            write_file(out_dir + "/Result_" + std::to_string(n) + "/" + safe_name(outputs[k].name) + ".raw",
                       bytes.data(), bytes.size());
        }
    }
    if (!profile.level.empty()) {
        const std::string text = profile_json(profile);
        write_file(out_dir + "/profile.json", text.data(), text.size());
    }
    std::printf("ran %ld inference(s) on %s -> %s\n", count, backend.c_str(), out_dir.c_str());
    return 0;
}

}  // namespace
}  // namespace runner

int main(int argc, char** argv) {
    try {
        return runner::run(argc, argv);
    } catch (const runner::Error& e) {
        std::fprintf(stderr, "qnn-net-run: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "qnn-net-run: error: %s\n", e.what());
        return 1;
    }
}
