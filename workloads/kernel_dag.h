// The kernel DAG a transformer phase lowers to: vertices are kernel launches (with the
// framework op they belong to), edges are data dependencies (producer -> consumer). It is a
// list of vertices with their producers (a Boost.Graph view on request); the engine schedules it
// through to_nodes().
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstddef>
#include <cstdint>
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
  std::optional<sim::Time> host_gap;         // eager mode (hw::KernelNode::host_gap)
  bool host_sync = false;                    // eager mode (hw::KernelNode::host_sync)
  int stream = 0;  // a side stream (DDP's NCCL stream) runs beside the current stream
};

class KernelDag {
 public:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
  using Vertex = Graph::vertex_descriptor;

  // Adds a kernel that waits for `deps` (vertices already in the DAG, so the DAG stays acyclic
  // and insertion order is a topological order).
  Vertex add(hw::Launch launch, std::string op, const std::vector<Vertex>& deps,
             std::optional<KernelSemantics> semantics = std::nullopt);

  std::size_t size() const { return vertices_.size(); }
  std::size_t edge_count() const;
  const KernelVertex& operator[](Vertex v) const { return vertices_[v]; }
  // The host time before vertex v's launch is issued in eager mode (workloads/host_issue.h).
  void set_host_gap(Vertex v, sim::Time gap) { vertices_[v].host_gap = gap; }
  // The host waits for vertex v's kernel to end before it issues more (.item(), .cpu()).
  void set_host_sync(Vertex v) { vertices_[v].host_sync = true; }
  void set_stream(Vertex v, int stream) { vertices_[v].stream = stream; }
  // A vertex's producers, ascending, each once.
  const std::vector<Vertex>& deps(Vertex v) const { return deps_[v]; }
  // The DAG as a Boost.Graph (producer -> consumer edges), for graph algorithms. Built on
  // request: building a step's program is on the simulator's hot path and needs only the lists.
  Graph graph() const;

  // The engine's input: one node per vertex in insertion order, on its stream (eager PyTorch
  // launches everything on the current stream but DDP's collectives), with each vertex's
  // producers as dependencies.
  std::vector<hw::KernelNode> to_nodes() const&;
  // The same, moving the launches out of a DAG that is not needed afterwards.
  std::vector<hw::KernelNode> to_nodes() &&;

 private:
  std::vector<KernelVertex> vertices_;     // by vertex index
  std::vector<std::vector<Vertex>> deps_;  // by vertex index
};

}  // namespace gpusim::workloads
