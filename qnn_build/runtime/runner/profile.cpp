// profile.json as `qnn-build net-run` writes it (qnn_build/runtime/profile.py, docs/formats.md):
// the same keys, sorted, the same statistics.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "runner.h"

namespace runner {
namespace {

std::string number(double v, int decimals) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

std::string list(const std::vector<double>& v, int decimals, const std::string& indent) {
    if (v.empty()) return "[]";
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + ("\n" + indent + " ") + number(v[i], decimals);
    return s + "\n" + indent + "]";
}

// numpy's default percentile: linear between the closest ranks.
double percentile(std::vector<double> s, double q) {
    std::sort(s.begin(), s.end());
    const double pos = static_cast<double>(s.size() - 1) * q / 100.0;
    const size_t lo = static_cast<size_t>(std::floor(pos)), hi = std::min(lo + 1, s.size() - 1);
    return s[lo] + (s[hi] - s[lo]) * (pos - static_cast<double>(lo));
}

std::string stats(const std::vector<double>& v, const std::string& indent) {
    if (v.empty()) return "{}";
    double sum = 0;
    for (double x : v) sum += x;
    const std::map<std::string, double> fields = {
        {"max", *std::max_element(v.begin(), v.end())}, {"mean", sum / static_cast<double>(v.size())},
        {"min", *std::min_element(v.begin(), v.end())}, {"p50", percentile(v, 50)}, {"p90", percentile(v, 90)}};
    std::string s = "{";
    for (const auto& [key, value] : fields)
        s += (s.size() > 1 ? ",\n" : "\n") + indent + " " + quoted(key) + ": " + number(value, 3);
    return s + "\n" + indent + "}";
}

// A JSON object of already-formatted values, keys sorted (json.dumps(sort_keys=True, indent=1)).
std::string object(const std::map<std::string, std::string>& fields, const std::string& indent) {
    std::string s = "{";
    for (const auto& [key, value] : fields)
        s += (s.size() > 1 ? ",\n" : "\n") + indent + " " + quoted(key) + ": " + value;
    return s + "\n" + indent + "}";
}

}  // namespace

std::string profile_json(const Profile& p) {
    std::map<std::string, std::string> fields = {
        {"backend", quoted(p.backend)},
        {"execute_stats", stats(p.execute_us, " ")},
        {"execute_us", list(p.execute_us, 1, " ")},
        {"format_version", "1"},
        {"num_inferences", std::to_string(p.execute_us.size())},
        {"profiling_level", quoted(p.level)}};
    for (const auto& [key, us] : p.init_us) fields[key] = number(us, 1);
    if (p.level == "detailed") {
        std::string nodes = "[";
        for (size_t i = 0; i < p.nodes.size(); ++i) {
            const ProfiledNode& n = p.nodes[i];
            std::string outputs = "[";
            for (size_t k = 0; k < n.outputs.size(); ++k) {
                std::string dims = "[";
                for (size_t d = 0; d < n.outputs[k].size(); ++d)
                    dims += (d ? ",\n     " : "\n     ") + std::to_string(n.outputs[k][d]);
                outputs += (k ? ",\n    " : "\n    ") + (n.outputs[k].empty() ? "[]" : dims + "\n    ]");
            }
            outputs += n.outputs.empty() ? "]" : "\n   ]";
            std::map<std::string, std::string> node = {{"name", quoted(n.name)}, {"op", quoted(n.op)},
                                                       {"outputs", outputs}, {"stats", stats(n.time_us, "   ")},
                                                       {"time_us", list(n.time_us, 3, "   ")}};
            if (!n.fused.empty()) node["fused"] = quoted(n.fused);
            nodes += (i ? ",\n  " : "\n  ") + object(node, "  ");
        }
        fields["nodes"] = nodes + (p.nodes.empty() ? "]" : "\n ]");
    }
    return object(fields, "") + "\n";
}

}  // namespace runner
