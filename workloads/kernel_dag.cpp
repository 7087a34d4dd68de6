#include "workloads/kernel_dag.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/error.h"

namespace gpusim::workloads {

KernelDag::Vertex KernelDag::add(hw::Launch launch, std::string op, const std::vector<Vertex>& deps,
                                 std::optional<KernelSemantics> semantics) {
  Graph& g = *graph_;
  const Vertex v = boost::add_vertex(g);
  vertices_.push_back(KernelVertex{std::move(launch), std::move(op), std::move(semantics)});
  for (const Vertex d : deps) {
    if (d >= v) throw ModelError(fmt::format("kernel DAG: vertex {} depends on later vertex {}", v, d));
    if (!boost::edge(d, v, g).second) boost::add_edge(d, v, g);
  }
  return v;
}

namespace {
template <class Vertices, class TakeLaunch>
std::vector<hw::KernelNode> nodes_of(const KernelDag::Graph& graph, Vertices& vertices, TakeLaunch take) {
  std::vector<hw::KernelNode> nodes;
  const auto n = boost::num_vertices(graph);
  nodes.reserve(n);
  for (KernelDag::Vertex v = 0; v < n; ++v) {
    hw::KernelNode node{take(vertices[v].launch), vertices[v].op, 0, {}};
    for (auto [e, end] = boost::in_edges(v, graph); e != end; ++e) {
      node.deps.push_back(static_cast<int>(boost::source(*e, graph)));
    }
    std::sort(node.deps.begin(), node.deps.end());  // edge order is not part of the contract
    nodes.push_back(std::move(node));
  }
  return nodes;
}
}  // namespace

std::vector<hw::KernelNode> KernelDag::to_nodes() const& {
  return nodes_of(*graph_, vertices_, [](const hw::Launch& l) { return l; });
}

std::vector<hw::KernelNode> KernelDag::to_nodes() && {
  return nodes_of(*graph_, vertices_, [](hw::Launch& l) { return std::move(l); });
}

}  // namespace gpusim::workloads
