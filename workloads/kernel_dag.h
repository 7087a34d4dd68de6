// The kernel DAG a transformer phase lowers to: vertices are kernel launches (with the
// framework op they belong to), edges are data dependencies (producer -> consumer). It is a
// Boost.Graph adjacency list; the engine schedules it through to_nodes().
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/gpu_engine.h"
#include "hw/launch.h"

namespace gpusim::workloads {

// What a framework op computes, at the level of the model code (not of its kernels): set on
// the launch that produces the op's result, so the DAG can be run functionally
// (validation/functional/dag_interpreter.h). `what` names the function ("linear", "add",
// "mean_last", ...; the interpreter lists them), `inputs` and `output` are tensors of the
// program, `dims` and `scalar` are its parameters (shapes, eps, scale).
struct KernelSemantics {
  std::string what;
  std::vector<std::string> inputs;
  std::string output;
  std::vector<std::int64_t> dims;
  double scalar = 0;
};

struct KernelVertex {
  hw::Launch launch;
  std::string op;  // the framework-level op, e.g. "layers[3].attn.q_proj"
  std::optional<KernelSemantics> semantics;  // on the op's last launch only
};

class KernelDag {
 public:
  // The dependency structure; the kernels themselves sit beside it, by vertex index (a Boost
  // vertex property would be copied each time the vertex storage grows).
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
  using Vertex = Graph::vertex_descriptor;

  // Adds a kernel that waits for `deps` (vertices already in the DAG, so the DAG stays acyclic
  // and insertion order is a topological order).
  Vertex add(hw::Launch launch, std::string op, const std::vector<Vertex>& deps,
             std::optional<KernelSemantics> semantics = std::nullopt);

  std::size_t size() const { return vertices_.size(); }
  std::size_t edge_count() const { return boost::num_edges(*graph_); }
  const Graph& graph() const { return *graph_; }
  const KernelVertex& operator[](Vertex v) const { return vertices_[v]; }

  // The engine's input: one node per vertex in insertion order, on one stream (eager PyTorch
  // launches everything on the current stream), with each vertex's producers as dependencies.
  std::vector<hw::KernelNode> to_nodes() const&;
  // The same, moving the launches out of a DAG that is not needed afterwards.
  std::vector<hw::KernelNode> to_nodes() &&;

 private:
  // Behind a pointer so that moving a DAG moves it (Boost's adjacency_list copies on move).
  std::unique_ptr<Graph> graph_ = std::make_unique<Graph>();
  std::vector<KernelVertex> vertices_;  // by vertex index
};

}  // namespace gpusim::workloads
