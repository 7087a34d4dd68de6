#include "validation/kernel_class.h"

#include <array>
#include <regex>

namespace gpusim::validation {
namespace {

// Library GEMM kernels whose names carry their tile: the family prefix is the class.
const std::array<std::pair<std::regex, const char*>, 10>& gemm_families() {
  static const std::array<std::pair<std::regex, const char*>, 10> families{{
      {std::regex("nvjet_sm(\\d+)"), "nvjet_sm$1"},
      {std::regex("cutlass_(\\d+)_wmma_tensorop"), "cutlass_$1_wmma_tensorop"},
      {std::regex("cutlass_(\\d+)_tensorop"), "cutlass_$1_tensorop"},
      {std::regex("cutlass_(\\d+)_simt"), "cutlass_$1_simt"},
      {std::regex("sm(\\d+)_xmma_gemm"), "sm$1_xmma_gemm"},
      {std::regex("gemmSN_(NN|TN)_kernel"), "gemmSN_$1_kernel"},
      {std::regex("gemvx?::kernel|gemv2[NT]_kernel|gemvNSP_kernel"), "gemv"},
      {std::regex("splitKreduce_kernel"), "splitKreduce_kernel"},
      {std::regex("dot_kernel"), "dot_kernel"},
      {std::regex("sgemm_largek"), "sgemm_largek"},
  }};
  return families;
}

}  // namespace

std::string kernel_class(std::string_view name) {
  const std::string s(name);
  for (const auto& [pattern, cls] : gemm_families()) {
    std::smatch m;
    if (std::regex_search(s, m, pattern)) return m.format(cls);
  }
  // Other kernels: the function's own name, without "void", namespaces, template arguments and
  // parameters, and without a trailing tile or configuration ("..._16x128x128_...").
  std::string id = s.rfind("void ", 0) == 0 ? s.substr(5) : s;
  static const std::regex anonymous("\\(anonymous namespace\\)::");
  id = std::regex_replace(id, anonymous, "");
  id = id.substr(0, id.find_first_of("<("));
  if (const auto colon = id.rfind("::"); colon != std::string::npos) id = id.substr(colon + 2);
  static const std::regex tile("_\\d+x\\d+.*$");
  return std::regex_replace(id, tile, "");
}

std::string kernel_tile(std::string_view name) {
  // nvjet_sm90_tst_64x8_64x16_...: the tile, then the K step and stages; CUTLASS's first
  // "_<N>x<M>_" after the instruction shape (s16816gemm, s1688gemm, sgemm); sm80_xmma's tilesize.
  static const std::regex nvjet("nvjet_sm\\d+_[a-z0-9]+_(\\d+x\\d+)_");
  static const std::regex cutlass("cutlass_\\d+_\\w*?gemm_(?:[a-z][a-z0-9]*_)?(\\d+x\\d+)_");
  static const std::regex xmma("xmma_gemm_\\w*?tilesize(\\d+x\\d+)x\\d+");
  const std::string s(name);
  std::smatch m;
  for (const auto* pattern : {&nvjet, &cutlass, &xmma}) {
    if (std::regex_search(s, m, *pattern)) return m[1].str();
  }
  return "";
}

bool is_helper_kernel(std::string_view name) {
  return name.find("splitKreduce_kernel") != std::string_view::npos || name.find("Memset") != std::string_view::npos;
}

}  // namespace gpusim::validation
