#include "validation/functional/adamw.h"

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

#include "validation/functional/multi_tensor_apply.h"

namespace gpusim::functional {
namespace {

void check_lists(const std::vector<Tensor*>& params, const std::vector<Tensor*>& grads) {
  if (params.size() != grads.size())
    throw std::invalid_argument("optimizer: one gradient per parameter");
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i]->numel() != grads[i]->numel())
      throw std::invalid_argument("optimizer: gradient size");
  }
}

void check_state(const std::vector<Tensor*>& params, const AdamState& s) {
  if (s.exp_avg.size() != params.size() || s.exp_avg_sq.size() != params.size()) {
    throw std::invalid_argument("adamw: one state per parameter");
  }
}

std::vector<Tensor*> pointers(std::vector<Tensor>& ts) {
  std::vector<Tensor*> out;
  for (auto& t : ts) out.push_back(&t);
  return out;
}

// Runs one foreach op over `lists`, of which the first `written` are written and the last
// `loaded` loaded (the functors' res_arg_index and r_args_depth), appending its launches.
// `written_mask` (a bit per list) overrides `written` where the written lists are not the first.
void run_op(std::vector<KernelCounts>& out, std::string name,
            std::vector<std::vector<Tensor*>> lists, int written, int loaded, std::int64_t flops,
            bool scalar_list, std::int64_t elt_bytes, std::function<void(std::size_t, float*)> f,
            unsigned written_mask = 0) {
  ForeachOp op;
  op.name = std::move(name);
  const auto depth = static_cast<int>(lists.size());
  op.lists = std::move(lists);
  for (int l = 0; l < depth; ++l) {
    op.written.push_back(written_mask ? ((written_mask >> l) & 1u) != 0 : l < written);
    op.loaded.push_back(l >= depth - loaded);
  }
  op.f = std::move(f);
  op.flops_per_element = flops;
  op.max_tensors = mta_max_tensors(depth, scalar_list);
  op.elt_bytes = elt_bytes;
  for (auto& k : foreach_apply(op)) out.push_back(std::move(k));
}

// at::native::lerp: the form that is exact at the nearer end.
float lerp(float self, float end, float weight) {
  return std::abs(weight) < 0.5f ? self + weight * (end - self)
                                 : end - (end - self) * (1.f - weight);
}

}  // namespace

AdamState adam_state_for(const std::vector<Tensor*>& params) {
  AdamState s;
  for (const Tensor* p : params) {
    s.exp_avg.emplace_back(p->shape);
    s.exp_avg_sq.emplace_back(p->shape);
  }
  return s;
}

std::vector<KernelCounts> adamw_foreach(const std::vector<Tensor*>& params,
                                        const std::vector<Tensor*>& grads, AdamState& state,
                                        const AdamWConfig& cfg, std::int64_t elt_bytes) {
  check_lists(params, grads);
  check_state(params, state);
  const std::int64_t step = ++state.steps;
  const double bc1 = 1.0 - std::pow(cfg.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(cfg.beta2, static_cast<double>(step));
  // The Python-side scalars (doubles), handed to the kernels as floats.
  const auto decay = static_cast<float>(1.0 - cfg.lr * cfg.weight_decay);
  const auto w1 = static_cast<float>(1.0 - cfg.beta1), b2 = static_cast<float>(cfg.beta2);
  const auto w2 = static_cast<float>(1.0 - cfg.beta2), eps = static_cast<float>(cfg.eps);
  const auto bc2_sqrt = static_cast<float>(std::sqrt(bc2)),
             step_size = static_cast<float>(-(cfg.lr / bc1));
  const std::vector<Tensor*> m = pointers(state.exp_avg), v = pointers(state.exp_avg_sq);
  std::vector<Tensor> denom_t;
  for (const Tensor* p : params) denom_t.emplace_back(p->shape);
  const std::vector<Tensor*> d = pointers(denom_t);

  std::vector<KernelCounts> k;
  if (cfg.weight_decay != 0) {
    run_op(k, "adamw.weight_decay", {params}, 1, 1, 1, false, elt_bytes,
           [=](std::size_t, float* x) { x[0] *= decay; });
  }
  run_op(k, "adamw.exp_avg_lerp", {m, grads}, 1, 2, 3, false, elt_bytes,
         [=](std::size_t, float* x) { x[0] = lerp(x[0], x[1], w1); });
  run_op(k, "adamw.exp_avg_sq_mul", {v}, 1, 1, 1, false, elt_bytes,
         [=](std::size_t, float* x) { x[0] *= b2; });
  run_op(k, "adamw.exp_avg_sq_addcmul", {v, grads, grads}, 1, 3, 3, false, elt_bytes,
         [=](std::size_t, float* x) { x[0] += w2 * (x[1] * x[2]); });
  run_op(k, "adamw.denom_sqrt", {d, v}, 1, 1, 2, false, elt_bytes,
         [](std::size_t, float* x) { x[0] = std::sqrt(x[1]); });
  run_op(k, "adamw.denom_div", {d}, 1, 1, 2, true, elt_bytes,
         [=](std::size_t, float* x) { x[0] /= bc2_sqrt; });
  run_op(k, "adamw.denom_add", {d}, 1, 1, 1, false, elt_bytes,
         [=](std::size_t, float* x) { x[0] += eps; });
  run_op(k, "adamw.update", {params, m, d}, 1, 3, 3, true, elt_bytes,
         [=](std::size_t, float* x) { x[0] += step_size * (x[1] / x[2]); });
  return k;
}

std::vector<KernelCounts> adamw_fused(const std::vector<Tensor*>& params,
                                      const std::vector<Tensor*>& grads, AdamState& state,
                                      const AdamWConfig& cfg, std::int64_t elt_bytes) {
  check_lists(params, grads);
  check_state(params, state);
  const std::int64_t step = ++state.steps;
  // FusedAdamMathFunctor: the bias corrections in float from double, the rest as written
  // (double hyperparameters promote each product, stored back to float).
  const auto bc1 = static_cast<float>(1.0 - std::pow(cfg.beta1, static_cast<double>(step)));
  const auto bc2_sqrt =
      static_cast<float>(std::sqrt(1.0 - std::pow(cfg.beta2, static_cast<double>(step))));
  const double lr = cfg.lr, wd = cfg.weight_decay, b1 = cfg.beta1, b2 = cfg.beta2, eps = cfg.eps;
  std::vector<KernelCounts> k;
  // It writes params and both moments, not the gradients (list 1).
  run_op(
      k, "adamw.fused", {params, grads, pointers(state.exp_avg), pointers(state.exp_avg_sq)}, 0, 4,
      14, false, elt_bytes,
      [=](std::size_t, float* x) {
        float param = x[0], m = x[2], v = x[3];
        const float g = x[1];
        if (wd != 0) param = static_cast<float>(param - lr * wd * param);
        m = static_cast<float>(b1 * m + (1 - b1) * g);
        v = static_cast<float>(b2 * v + (1 - b2) * g * g);
        const auto step_size = static_cast<float>(lr / bc1);
        const auto denom = static_cast<float>(std::sqrt(v) / bc2_sqrt + eps);
        param -= step_size * m / denom;
        x[0] = param;
        x[2] = m;
        x[3] = v;
      },
      0b1101u);
  return k;
}

std::vector<KernelCounts> sgd_foreach(const std::vector<Tensor*>& params,
                                      const std::vector<Tensor*>& grads,
                                      std::vector<Tensor>& momentum_buffers, const SgdConfig& cfg,
                                      std::int64_t elt_bytes) {
  check_lists(params, grads);
  std::vector<KernelCounts> k;
  std::vector<Tensor> decayed;
  std::vector<Tensor*> g = grads;
  if (cfg.weight_decay != 0) {
    for (const Tensor* p : params) decayed.emplace_back(p->shape);
    g = pointers(decayed);
    const auto wd = static_cast<float>(cfg.weight_decay);
    run_op(k, "sgd.weight_decay", {g, grads, params}, 1, 2, 2, false, elt_bytes,
           [=](std::size_t, float* x) { x[0] = x[1] + wd * x[2]; });
  }
  // The direction the parameters move along: g itself without momentum.
  std::vector<Tensor*> dir = g;
  if (cfg.momentum != 0) {
    if (momentum_buffers.empty()) {
      for (const Tensor* t : g) momentum_buffers.push_back(*t);
    } else {
      if (momentum_buffers.size() != params.size())
        throw std::invalid_argument("sgd: one buffer per parameter");
      const auto mom = static_cast<float>(cfg.momentum),
                 keep = static_cast<float>(1.0 - cfg.dampening);
      const std::vector<Tensor*> buf = pointers(momentum_buffers);
      run_op(k, "sgd.momentum_mul", {buf}, 1, 1, 1, false, elt_bytes,
             [=](std::size_t, float* x) { x[0] *= mom; });
      run_op(k, "sgd.momentum_add", {buf, g}, 1, 2, 2, false, elt_bytes,
             [=](std::size_t, float* x) { x[0] += keep * x[1]; });
    }
    dir = pointers(momentum_buffers);
  }
  const auto neg_lr = static_cast<float>(-cfg.lr);
  run_op(k, "sgd.param_add", {params, dir}, 1, 2, 2, false, elt_bytes,
         [=](std::size_t, float* x) { x[0] += neg_lr * x[1]; });
  return k;
}

}  // namespace gpusim::functional
