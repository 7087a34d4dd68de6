#include "workloads/kernel_dag.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/error.h"

namespace gpusim::workloads {

KernelDag::Vertex KernelDag::add(hw::Launch launch, std::string op, const std::vector<Vertex>& deps,
                                 std::optional<KernelSemantics> semantics) {
  const Vertex v = vertices_.size();
  std::vector<Vertex> producers = deps;
  std::sort(producers.begin(), producers.end());
  producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
  if (!producers.empty() && producers.back() >= v) {
    throw ModelError(fmt::format("kernel DAG: vertex {} depends on later vertex {}", v, producers.back()));
  }
  vertices_.push_back(KernelVertex{std::move(launch), std::move(op), std::move(semantics), std::nullopt});
  deps_.push_back(std::move(producers));
  return v;
}

std::size_t KernelDag::edge_count() const {
  std::size_t n = 0;
  for (const auto& d : deps_) n += d.size();
  return n;
}

KernelDag::Graph KernelDag::graph() const {
  Graph g(vertices_.size());
  for (Vertex v = 0; v < deps_.size(); ++v) {
    for (const Vertex d : deps_[v]) boost::add_edge(d, v, g);
  }
  return g;
}

namespace {
template <class Vertices, class TakeLaunch>
std::vector<hw::KernelNode> nodes_of(Vertices& vertices, const std::vector<std::vector<KernelDag::Vertex>>& deps,
                                     TakeLaunch take) {
  std::vector<hw::KernelNode> nodes;
  nodes.reserve(vertices.size());
  for (std::size_t v = 0; v < vertices.size(); ++v) {
    hw::KernelNode node{take(vertices[v].launch), vertices[v].op, vertices[v].stream, {}, std::nullopt};
    node.deps.assign(deps[v].begin(), deps[v].end());
    node.host_gap = vertices[v].host_gap;
    node.host_sync = vertices[v].host_sync;
    nodes.push_back(std::move(node));
  }
  return nodes;
}
}  // namespace

std::vector<hw::KernelNode> KernelDag::to_nodes() const& {
  return nodes_of(vertices_, deps_, [](const hw::Launch& l) { return l; });
}

std::vector<hw::KernelNode> KernelDag::to_nodes() && {
  return nodes_of(vertices_, deps_, [](hw::Launch& l) { return std::move(l); });
}

}  // namespace gpusim::workloads
