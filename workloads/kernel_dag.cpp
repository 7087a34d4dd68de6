#include "workloads/kernel_dag.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/error.h"

namespace gpusim::workloads {

// GCC 12 with -fsanitize=address reports boost::optional's storage inside Boost.Graph's
// named-graph lookup (which add_vertex inlines) as uninitialized: a known false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
KernelDag::Vertex KernelDag::add(hw::Launch launch, std::string op, const std::vector<Vertex>& deps) {
  const Vertex v = boost::add_vertex(KernelVertex{std::move(launch), std::move(op)}, graph_);
  for (const Vertex d : deps) {
    if (d >= v) throw ModelError(fmt::format("kernel DAG: vertex {} depends on later vertex {}", v, d));
    if (!boost::edge(d, v, graph_).second) boost::add_edge(d, v, graph_);
  }
  return v;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

std::vector<hw::KernelNode> KernelDag::to_nodes() const {
  std::vector<hw::KernelNode> nodes;
  nodes.reserve(size());
  for (Vertex v = 0; v < size(); ++v) {
    hw::KernelNode node{graph_[v].launch, graph_[v].op, 0, {}};
    for (auto [e, end] = boost::in_edges(v, graph_); e != end; ++e) {
      node.deps.push_back(static_cast<int>(boost::source(*e, graph_)));
    }
    std::sort(node.deps.begin(), node.deps.end());  // edge order is not part of the contract
    nodes.push_back(std::move(node));
  }
  return nodes;
}

}  // namespace gpusim::workloads
