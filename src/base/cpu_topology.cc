#include "base/cpu_topology.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>

#include "base/check.h"

namespace xinfer {
namespace {

constexpr int kMaxCpus = 4096;

StatusOr<int> ParseCpu(std::string_view s, std::string_view whole) {
  int v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0 || v >= kMaxCpus)
    return InvalidArgument("'{}' is not a CPU list like 0-3,8 (bad CPU '{}')", whole, s);
  return v;
}

// The node whose CPUs hold all of `cpus`, or -1.
int NodeOf(std::span<const int> cpus, const std::vector<std::vector<int>>& nodes) {
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!cpus.empty() && std::all_of(cpus.begin(), cpus.end(), [&](int c) {
          return std::binary_search(nodes[n].begin(), nodes[n].end(), c);
        }))
      return static_cast<int>(n);
  return -1;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string_view::npos ? s.npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

StatusOr<std::vector<int>> ParseCpuList(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return InvalidArgument("empty CPU list");
  std::set<int> cpus;
  for (std::string_view item : Split(text, ',')) {
    const size_t dash = item.find('-');
    XI_ASSIGN_OR_RETURN(int first, ParseCpu(item.substr(0, dash), text));
    int last = first;
    if (dash != std::string_view::npos) {
      XI_ASSIGN_OR_RETURN(last, ParseCpu(item.substr(dash + 1), text));
      if (last < first) return InvalidArgument("'{}': the range {} runs backwards", text, item);
    }
    for (int c = first; c <= last; ++c) cpus.insert(c);
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

std::string FormatCpuList(std::span<const int> cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {0};
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::vector<std::vector<int>> NumaNodeCpus(const std::string& node_dir) {
  std::vector<std::vector<int>> nodes;
  std::error_code ec;
  for (int n = 0;; ++n) {
    const std::string dir = node_dir + "/node" + std::to_string(n);
    if (!std::filesystem::is_directory(dir, ec)) {
      // Node ids may have holes (offline nodes); stop after a run of absent ones.
      if (n > static_cast<int>(nodes.size()) + 64) break;
      continue;
    }
    nodes.resize(n + 1);
    std::ifstream in(dir + "/cpulist");
    std::string text;
    std::getline(in, text);
    if (auto cpus = ParseCpuList(text); cpus.ok()) nodes[n] = std::move(*cpus);
  }
  return nodes;
}

Status ValidateThreadsBind(std::string_view bind) {
  if (bind == "auto" || bind == "nobind") return Status::Ok();
  for (std::string_view list : Split(bind, '|')) {
    auto cpus = ParseCpuList(list);
    if (!cpus.ok())
      return InvalidArgument(
          "cpu_threads_bind '{}' is not auto, nobind or CPU lists separated by '|' (such as "
          "0-31|32-63): {}",
          bind, cpus.status().message());
  }
  return Status::Ok();
}

StatusOr<std::vector<RankPlacement>> PlanRankPlacement(std::string_view bind, int ranks,
                                                       std::span<const int> allowed,
                                                       const std::vector<std::vector<int>>& nodes) {
  XI_CHECK(ranks >= 1);
  XI_RETURN_IF_ERROR(ValidateThreadsBind(bind));
  std::vector<RankPlacement> placement(ranks);
  if (bind == "nobind") return placement;
  if (bind != "auto") {
    const std::vector<std::string_view> lists = Split(bind, '|');
    if (static_cast<int>(lists.size()) != ranks)
      return InvalidArgument("cpu_threads_bind '{}' has {} CPU lists for {} ranks", bind,
                             lists.size(), ranks);
    std::set<int> taken;
    for (int r = 0; r < ranks; ++r) {
      placement[r].cpus = *ParseCpuList(lists[r]);
      for (int c : placement[r].cpus) {
        if (!std::binary_search(allowed.begin(), allowed.end(), c))
          return InvalidArgument(
              "cpu_threads_bind: CPU {} of rank {} is not one this process may use ({})", c, r,
              FormatCpuList(allowed));
        if (!taken.insert(c).second)
          return InvalidArgument("cpu_threads_bind: CPU {} is in two ranks' lists", c);
      }
      placement[r].numa_node = NodeOf(placement[r].cpus, nodes);
    }
    return placement;
  }
  if (static_cast<int>(allowed.size()) < ranks)
    return InvalidArgument(
        "{} ranks need at least {} CPUs, but this process may use {} ({}); "
        "--cpu-threads-bind nobind runs them unbound",
        ranks, ranks, allowed.size(), FormatCpuList(allowed));
  // The allowed CPUs of each node, in node order, then the CPUs of no known node.
  std::vector<std::vector<int>> usable;
  std::vector<int> node_ids, ordered;
  for (size_t n = 0; n < nodes.size(); ++n) {
    std::vector<int> mine;
    for (int c : nodes[n])
      if (std::binary_search(allowed.begin(), allowed.end(), c)) mine.push_back(c);
    if (mine.empty()) continue;
    ordered.insert(ordered.end(), mine.begin(), mine.end());
    usable.push_back(std::move(mine));
    node_ids.push_back(static_cast<int>(n));
  }
  for (int c : allowed)
    if (std::find(ordered.begin(), ordered.end(), c) == ordered.end()) ordered.push_back(c);
  if (static_cast<int>(usable.size()) >= ranks) {
    for (int r = 0; r < ranks; ++r) placement[r] = {usable[r], node_ids[r]};
    return placement;
  }
  const int64_t total = static_cast<int64_t>(ordered.size());
  for (int r = 0; r < ranks; ++r) {
    const auto begin = ordered.begin() + total * r / ranks;
    const auto end = ordered.begin() + total * (r + 1) / ranks;
    placement[r].cpus.assign(begin, end);
    std::sort(placement[r].cpus.begin(), placement[r].cpus.end());
    placement[r].numa_node = NodeOf(placement[r].cpus, nodes);
  }
  return placement;
}

bool PinCurrentThread(std::span<const int> cpus) {
  if (cpus.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

}  // namespace xinfer
