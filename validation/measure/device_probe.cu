// device_probe.cu: ground-truth hardware parameters of the local CUDA GPU for gpusim.
//
// Build: nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -o device_probe device_probe.cu
// Run:   ./device_probe <gpu_tag> <out_dir>
// Writes:
//   <out_dir>/device_probe_<tag>.json             properties, latencies, bandwidths
//   <out_dir>/occupancy_reference_<tag>.csv       <cuda_occupancy.h> grid with real props
//   <out_dir>/occupancy_runtime_check_<tag>.csv   runtime API vs header on real kernels
// Each measurement runs in its own try/catch; the JSON is rewritten after each
// section, so partial results survive a later failure.

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "occupancy_grid.h"

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess)                                                                    \
      throw std::runtime_error(std::string(#x) + " -> " + cudaGetErrorString(e_) + " @" +      \
                               std::to_string(__LINE__));                                     \
  } while (0)

// ---------------------------------------------------------------- tiny JSON builder
struct JObj {
  std::vector<std::pair<std::string, std::string>> kv;  // value is raw JSON
  static std::string q(const std::string& s) {
    std::string o = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') { o += '\\'; o += c; }
      else if ((unsigned char)c < 0x20) { char b[8]; std::snprintf(b, 8, "\\u%04x", c); o += b; }
      else o += c;
    }
    return o + "\"";
  }
  void set(const std::string& k, const std::string& raw) {
    for (auto& p : kv) if (p.first == k) { p.second = raw; return; }
    kv.emplace_back(k, raw);
  }
  void s(const std::string& k, const std::string& v) { set(k, q(v)); }
  void i(const std::string& k, long long v) { set(k, std::to_string(v)); }
  void d(const std::string& k, double v) {
    char b[64];
    if (v != v) std::snprintf(b, 64, "null");
    else std::snprintf(b, 64, "%.6g", v);
    set(k, b);
  }
  void o(const std::string& k, const JObj& v) { set(k, v.str()); }
  void a(const std::string& k, const std::vector<JObj>& v) {
    std::string r = "[";
    for (size_t j = 0; j < v.size(); ++j) r += (j ? ",\n    " : "\n    ") + v[j].str();
    set(k, r + (v.empty() ? "]" : "\n  ]"));
  }
  std::string str() const {
    std::string r = "{";
    for (size_t j = 0; j < kv.size(); ++j) r += (j ? ", " : "") + q(kv[j].first) + ": " + kv[j].second;
    return r + "}";
  }
  std::string pretty() const {
    std::string r = "{\n";
    for (size_t j = 0; j < kv.size(); ++j)
      r += "  " + q(kv[j].first) + ": " + kv[j].second + (j + 1 < kv.size() ? ",\n" : "\n");
    return r + "}\n";
  }
};

static JObj g_root;
static std::vector<JObj> g_errors;
static std::string g_json_path;

static void flush_json() {
  g_root.a("errors", g_errors);
  FILE* f = std::fopen(g_json_path.c_str(), "w");
  if (!f) { std::fprintf(stderr, "cannot write %s\n", g_json_path.c_str()); return; }
  std::fputs(g_root.pretty().c_str(), f);
  std::fclose(f);
}

static void record_error(const std::string& where, const std::string& what) {
  std::fprintf(stderr, "[ERROR] %s: %s\n", where.c_str(), what.c_str());
  JObj e; e.s("section", where); e.s("error", what);
  g_errors.push_back(e);
  cudaGetLastError();  // clear non-sticky errors
}

static double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// ---------------------------------------------------------------- kernels
__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
  return t;
}

template <int MODE>  // 0: ld.global.ca (L1-cached), 1: ld.global.cg (L2 only)
__device__ __forceinline__ unsigned long long ldp(unsigned long long a) {
  unsigned long long v;
  if (MODE == 0) asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(v) : "l"(a) : "memory");
  else asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(a) : "memory");
  return v;
}

// Single-thread dependent pointer chase. res[0]=cycles, res[1]=ns, res[2]=final ptr.
template <int MODE>
__global__ void chase_kernel(unsigned long long start, long long warm, long long n, long long* res) {
  unsigned long long p = start;
  for (long long i = 0; i < warm; ++i) p = ldp<MODE>(p);
  unsigned long long g0 = gtimer();
  long long c0 = clock64();
  for (long long i = 0; i < n; i += 8) {
#pragma unroll
    for (int k = 0; k < 8; ++k) p = ldp<MODE>(p);
  }
  long long c1 = clock64();
  unsigned long long g1 = gtimer();
  res[0] = c1 - c0;
  res[1] = (long long)(g1 - g0);
  res[2] = (long long)p;
}

// Builds the chain: buf[order[i]*sw] = &buf[order[i+1]*sw] (single cycle).
__global__ void build_chain(unsigned long long* buf, const unsigned* order, size_t n, size_t sw) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t st = (size_t)gridDim.x * blockDim.x;
  for (; i < n; i += st) {
    size_t nx = (i + 1 == n) ? 0 : i + 1;
    buf[(size_t)order[i] * sw] = (unsigned long long)(buf + (size_t)order[nx] * sw);
  }
}

// Shared-memory dependent chase (single thread): each word holds the shared-window
// byte address of the next word, so the loop is a pure chain of ld.shared.u32.
__global__ void smem_chase_kernel(int n_elems, long long n, long long* res) {
  __shared__ unsigned s[4096];
  if (threadIdx.x != 0) return;
  unsigned base = (unsigned)__cvta_generic_to_shared(s);
  // stride-33 walk (33 coprime with 4096): a single cycle through all words
  for (int i = 0; i < n_elems; ++i) s[i] = base + 4u * (unsigned)((i + 33) % n_elems);
  __syncwarp(1u);
  unsigned p = base;
  for (int i = 0; i < 1024; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p)::"memory");
  long long c0 = clock64();
  unsigned long long g0 = gtimer();
  for (long long i = 0; i < n; i += 8) {
#pragma unroll
    for (int k = 0; k < 8; ++k) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p)::"memory");
  }
  long long c1 = clock64();
  unsigned long long g1 = gtimer();
  res[0] = c1 - c0;
  res[1] = (long long)(g1 - g0);
  res[2] = p;
}

// Streaming read with 16-byte L2-only loads; one int4 written per thread.
// The buffer (nvec int4, nvec a power of two) is read `passes` times as one flat
// cyclic index space (k & mask), 8 independent loads in flight per thread per
// iteration, consecutive threads reading consecutive 16-byte words.
__global__ void __launch_bounds__(1024) read_bw_kernel(const int4* __restrict__ buf, size_t nvec, int passes,
                                                       int4* __restrict__ out) {
  size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t nth = (size_t)gridDim.x * blockDim.x;
  size_t total = nvec * (size_t)passes;
  size_t mask = nvec - 1;
  int4 acc = make_int4(0, 0, 0, 0);
  for (size_t k = tid; k < total; k += nth * 8) {
    int4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      size_t kk = k + j * nth;
      v[j] = kk < total ? __ldcg(buf + (kk & mask)) : make_int4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) { acc.x += v[j].x; acc.y ^= v[j].y; acc.z += v[j].z; acc.w ^= v[j].w; }
  }
  out[tid] = acc;
}

__global__ void fill_kernel(unsigned* buf, size_t n, unsigned seed) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t st = (size_t)gridDim.x * blockDim.x;
  for (; i < n; i += st) buf[i] = (unsigned)(i * 2654435761u) ^ seed;
}

// FP32 FMA throughput: 8 independent chains per thread.
__global__ void __launch_bounds__(1024) ffma_kernel(float* out, int iters, float a, float b, long long* clk) {
  float x0 = threadIdx.x * 1e-3f, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3, x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6,
        x7 = x0 + 7;
  long long c0 = clock64();
  unsigned long long g0 = gtimer();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
      x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
    }
  }
  long long c1 = clock64();
  unsigned long long g1 = gtimer();
  size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  out[tid] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
  if (tid == 0) { clk[0] = c1 - c0; clk[1] = (long long)(g1 - g0); }
}

// Kernels with different register pressure for the occupancy runtime check.
template <int N>
__global__ void k_regs(const float* __restrict__ in, float* __restrict__ out, int iters) {
  extern __shared__ float dyn[];
  float acc[N];
#pragma unroll
  for (int k = 0; k < N; ++k) acc[k] = in[threadIdx.x + k];
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < N; ++k) acc[k] = fmaf(acc[k], acc[(k + 1) % N], acc[(k + 7) % N]);
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < N; ++k) s += acc[k] * (float)(k + 1);
  if (iters < 0) dyn[threadIdx.x] = s;
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void k_static_smem(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float st[4096];  // 16 KiB static
  extern __shared__ float dyn[];
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) st[i] = in[i];
  __syncthreads();
  float v = st[(threadIdx.x * 7) % 4096];
  if (v == 12345.f) dyn[0] = v;
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// ---------------------------------------------------------------- sections
static cudaDeviceProp g_prop;
static int g_dev = 0;

static void section_props() {
  CK(cudaGetDeviceProperties(&g_prop, g_dev));
  const cudaDeviceProp& p = g_prop;
  JObj j;
  j.s("name", p.name);
  j.i("major", p.major); j.i("minor", p.minor);
  j.i("multiProcessorCount", p.multiProcessorCount);
  j.i("l2CacheSize", p.l2CacheSize);
  j.i("persistingL2CacheMaxSize", p.persistingL2CacheMaxSize);
  j.i("accessPolicyMaxWindowSize", p.accessPolicyMaxWindowSize);
  j.i("sharedMemPerMultiprocessor", (long long)p.sharedMemPerMultiprocessor);
  j.i("sharedMemPerBlock", (long long)p.sharedMemPerBlock);
  j.i("sharedMemPerBlockOptin", (long long)p.sharedMemPerBlockOptin);
  j.i("reservedSharedMemPerBlock", (long long)p.reservedSharedMemPerBlock);
  j.i("regsPerMultiprocessor", p.regsPerMultiprocessor);
  j.i("regsPerBlock", p.regsPerBlock);
  j.i("maxThreadsPerMultiProcessor", p.maxThreadsPerMultiProcessor);
  j.i("maxBlocksPerMultiProcessor", p.maxBlocksPerMultiProcessor);
  j.i("maxThreadsPerBlock", p.maxThreadsPerBlock);
  j.i("warpSize", p.warpSize);
  j.i("totalGlobalMem", (long long)p.totalGlobalMem);
  j.i("totalConstMem", (long long)p.totalConstMem);
  j.i("memoryBusWidth", p.memoryBusWidth);
  j.i("concurrentKernels", p.concurrentKernels);
  j.i("asyncEngineCount", p.asyncEngineCount);
  j.i("ECCEnabled", p.ECCEnabled);
  j.i("clusterLaunch", p.clusterLaunch);
  j.i("globalL1CacheSupported", p.globalL1CacheSupported);
  j.i("localL1CacheSupported", p.localL1CacheSupported);
  char bus[64];
  std::snprintf(bus, sizeof bus, "%04x:%02x:%02x", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  j.s("pci", bus);
  g_root.o("cudaDeviceProp", j);

  JObj a;
  struct { const char* n; cudaDeviceAttr at; } attrs[] = {
      {"cudaDevAttrClockRate_kHz", cudaDevAttrClockRate},
      {"cudaDevAttrMemoryClockRate_kHz", cudaDevAttrMemoryClockRate},
      {"cudaDevAttrGlobalMemoryBusWidth", cudaDevAttrGlobalMemoryBusWidth},
      {"cudaDevAttrL2CacheSize", cudaDevAttrL2CacheSize},
      {"cudaDevAttrMaxPersistingL2CacheSize", cudaDevAttrMaxPersistingL2CacheSize},
      {"cudaDevAttrMultiProcessorCount", cudaDevAttrMultiProcessorCount},
      {"cudaDevAttrMaxSharedMemoryPerMultiprocessor", cudaDevAttrMaxSharedMemoryPerMultiprocessor},
      {"cudaDevAttrMaxSharedMemoryPerBlock", cudaDevAttrMaxSharedMemoryPerBlock},
      {"cudaDevAttrMaxSharedMemoryPerBlockOptin", cudaDevAttrMaxSharedMemoryPerBlockOptin},
      {"cudaDevAttrReservedSharedMemoryPerBlock", cudaDevAttrReservedSharedMemoryPerBlock},
      {"cudaDevAttrMaxRegistersPerMultiprocessor", cudaDevAttrMaxRegistersPerMultiprocessor},
      {"cudaDevAttrMaxRegistersPerBlock", cudaDevAttrMaxRegistersPerBlock},
      {"cudaDevAttrMaxThreadsPerMultiProcessor", cudaDevAttrMaxThreadsPerMultiProcessor},
      {"cudaDevAttrMaxBlocksPerMultiprocessor", cudaDevAttrMaxBlocksPerMultiprocessor},
      {"cudaDevAttrMaxThreadsPerBlock", cudaDevAttrMaxThreadsPerBlock},
      {"cudaDevAttrWarpSize", cudaDevAttrWarpSize},
      {"cudaDevAttrComputeCapabilityMajor", cudaDevAttrComputeCapabilityMajor},
      {"cudaDevAttrComputeCapabilityMinor", cudaDevAttrComputeCapabilityMinor},
      {"cudaDevAttrAsyncEngineCount", cudaDevAttrAsyncEngineCount},
      {"cudaDevAttrGlobalL1CacheSupported", cudaDevAttrGlobalL1CacheSupported},
      {"cudaDevAttrClusterLaunch", cudaDevAttrClusterLaunch},
  };
  for (auto& x : attrs) {
    int v = -1;
    cudaError_t e = cudaDeviceGetAttribute(&v, x.at, g_dev);
    if (e == cudaSuccess) a.i(x.n, v);
    else { a.s(x.n, std::string("error: ") + cudaGetErrorString(e)); cudaGetLastError(); }
  }
  g_root.o("cudaDeviceGetAttribute", a);

  JObj v;
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  v.i("cudaDriverGetVersion", drv);
  v.i("cudaRuntimeGetVersion", rt);
  v.i("CUDART_VERSION_compiled", CUDART_VERSION);
  g_root.o("versions", v);
  flush_json();
  std::printf("device: %s  cc %d.%d  SMs %d  L2 %d B  smem/SM %zu  optin %zu\n", p.name, p.major, p.minor,
              p.multiProcessorCount, p.l2CacheSize, p.sharedMemPerMultiprocessor, p.sharedMemPerBlockOptin);
}

static void section_occupancy(const std::string& tag, const std::string& outdir) {
  cudaOccDeviceProp op(g_prop);
  std::vector<std::string> hdr = {
      "occupancy reference from NVIDIA <cuda_occupancy.h> (CUDA " + std::to_string(CUDART_VERSION) +
          ") cudaOccMaxActiveBlocksPerMultiprocessor",
      std::string("cudaOccDeviceProp built from the real cudaDeviceProp of: ") + g_prop.name,
      "func attrs: numRegs=regs, sharedSizeBytes=0 (static), dynamic smem=smem_bytes, shmemLimitConfig=OPTIN, "
      "maxDynamicSharedSizeBytes=sharedMemPerBlockOptin, numBlockBarriers=1; default cudaOccDeviceState",
      "limiter = cudaOccResult.limitingFactors bits, ties joined by '+'; ctas_per_sm=0 means it does not fit",
      "generated by validation/measure/device_probe.cu"};
  std::string path = outdir + "/occupancy_reference_" + tag + ".csv";
  int rows = occgrid::write_grid_csv(path.c_str(), op, hdr);
  JObj j;
  j.s("file", "occupancy_reference_" + tag + ".csv");
  j.i("rows", rows);
  g_root.o("occupancy_reference", j);
  flush_json();
  std::printf("occupancy reference: %d rows -> %s\n", rows, path.c_str());
}

template <typename K>
static void occ_check_kernel(FILE* f, const char* name, K kernel, std::vector<JObj>& rows) {
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, kernel));
  int max_dyn = (int)g_prop.sharedMemPerBlockOptin - (int)fa.sharedSizeBytes;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_dyn));
  CK(cudaFuncGetAttributes(&fa, kernel));
  cudaOccDeviceProp op(g_prop);
  cudaOccFuncAttributes ofa(fa);
  const int threads[] = {128, 256, 1024};
  const size_t smems[] = {0, 8192, 32768, 65536, 100000, 200000, 232448};
  for (int t : threads)
    for (size_t s : smems) {
      int rt = -1;
      std::string rterr;
      if (s > (size_t)max_dyn) { rt = -2; rterr = "smem>maxDynamic"; }
      else {
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&rt, kernel, t, s);
        if (e != cudaSuccess) { rterr = cudaGetErrorString(e); rt = -1; cudaGetLastError(); }
      }
      unsigned lim = 0;
      int hd = occgrid::header_ctas(op, ofa, t, s, &lim);
      std::fprintf(f, "%s,%d,%d,%zu,%d,%d\n", name, fa.numRegs, t, s, rt, hd);
      JObj r;
      r.s("kernel", name); r.i("numRegs", fa.numRegs); r.i("staticSmem", (long long)fa.sharedSizeBytes);
      r.i("threads", t); r.i("smem", (long long)s); r.i("runtime_ctas", rt); r.i("header_ctas", hd);
      r.s("header_limiter", occgrid::limiter_string(lim));
      if (!rterr.empty()) r.s("runtime_note", rterr);
      rows.push_back(r);
    }
  std::printf("  %-16s numRegs=%d staticSmem=%zu maxThreadsPerBlock=%d\n", name, fa.numRegs, fa.sharedSizeBytes,
              fa.maxThreadsPerBlock);
}

static void section_occ_runtime(const std::string& tag, const std::string& outdir) {
  std::string path = outdir + "/occupancy_runtime_check_" + tag + ".csv";
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::fprintf(f, "kernel,numRegs,threads,smem,runtime_ctas,header_ctas\n");
  std::vector<JObj> rows;
  std::vector<std::string> errs;
  auto guard = [&](const char* n, auto fn) {
    try { fn(); } catch (std::exception& e) { record_error(std::string("occ_runtime:") + n, e.what()); }
  };
  guard("k_regs_4", [&] { occ_check_kernel(f, "k_regs_4", k_regs<4>, rows); });
  guard("k_regs_32", [&] { occ_check_kernel(f, "k_regs_32", k_regs<32>, rows); });
  guard("k_regs_64", [&] { occ_check_kernel(f, "k_regs_64", k_regs<64>, rows); });
  guard("k_regs_120", [&] { occ_check_kernel(f, "k_regs_120", k_regs<120>, rows); });
  guard("k_static_smem", [&] { occ_check_kernel(f, "k_static_smem", k_static_smem, rows); });
  std::fclose(f);
  int mismatches = 0;
  for (auto& r : rows) {
    long long rt = std::stoll(r.kv[5].second), hd = std::stoll(r.kv[6].second);
    if (rt >= 0 && rt != hd) ++mismatches;
  }
  JObj j;
  j.s("file", "occupancy_runtime_check_" + tag + ".csv");
  j.i("rows", (long long)rows.size());
  j.i("mismatches_runtime_vs_header", mismatches);
  j.a("rows_detail", rows);
  g_root.o("occupancy_runtime_check", j);
  flush_json();
  std::printf("occupancy runtime check: %zu rows, %d mismatches\n", rows.size(), mismatches);
}

// Pointer-chase latency.
struct ChaseBuf {
  unsigned long long* buf = nullptr;
  size_t bytes = 0;
  unsigned* d_order = nullptr;
  size_t order_cap = 0;
  void* flush = nullptr;
  size_t flush_bytes = 0;
  long long* d_res = nullptr;
};

static JObj chase(ChaseBuf& cb, const char* label, size_t span, size_t stride, int mode, long long n_timed,
                  bool full_warm, bool flush_before, int runs, std::mt19937_64& rng) {
  size_t n = span / stride;
  if (n < 2) throw std::runtime_error("span/stride < 2");
  if (span > cb.bytes) throw std::runtime_error("span larger than buffer");
  std::vector<unsigned> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin() + 1, order.end(), rng);  // order[0]=0, random single cycle
  if (n > cb.order_cap) {
    if (cb.d_order) cudaFree(cb.d_order);
    CK(cudaMalloc(&cb.d_order, n * sizeof(unsigned)));
    cb.order_cap = n;
  }
  CK(cudaMemcpy(cb.d_order, order.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  build_chain<<<1024, 256>>>(cb.buf, cb.d_order, n, stride / 8);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  long long warm = full_warm ? (long long)n : 1000;
  if (!full_warm && (size_t)(warm + n_timed) > n) warm = 0;  // avoid revisits for DRAM runs
  std::vector<double> cyc, ns;
  for (int r = 0; r < runs; ++r) {
    if (flush_before) {
      CK(cudaMemset(cb.flush, r + 1, cb.flush_bytes));
      CK(cudaDeviceSynchronize());
    }
    if (mode == 0) chase_kernel<0><<<1, 1>>>((unsigned long long)cb.buf, warm, n_timed, cb.d_res);
    else chase_kernel<1><<<1, 1>>>((unsigned long long)cb.buf, warm, n_timed, cb.d_res);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    long long h[3];
    CK(cudaMemcpy(h, cb.d_res, sizeof h, cudaMemcpyDeviceToHost));
    cyc.push_back((double)h[0] / n_timed);
    ns.push_back((double)h[1] / n_timed);
  }
  JObj j;
  j.s("label", label);
  j.s("load", mode == 0 ? "ld.global.ca.u64" : "ld.global.cg.u64");
  j.i("span_bytes", (long long)span);
  j.i("stride_bytes", (long long)stride);
  j.i("elements_in_cycle", (long long)n);
  j.i("warm_loads", warm);
  j.i("timed_loads", n_timed);
  j.i("runs", runs);
  j.i("l2_flushed_before_each_run", flush_before ? 1 : 0);
  double mc = median(cyc), mn = median(ns);
  j.d("cycles_per_load_median", mc);
  j.d("ns_per_load_median", mn);
  j.d("cycles_per_load_min", *std::min_element(cyc.begin(), cyc.end()));
  j.d("cycles_per_load_max", *std::max_element(cyc.begin(), cyc.end()));
  j.d("implied_sm_clock_MHz", mn > 0 ? 1e3 * mc / mn : NAN);
  std::printf("  latency %-34s span %10zu stride %6zu %s: %8.1f cycles  %8.1f ns\n", label, span, stride,
              mode == 0 ? "ca" : "cg", mc, mn);
  std::fflush(stdout);
  return j;
}

static void section_latency() {
  ChaseBuf cb;
  std::vector<JObj> rows;
  std::mt19937_64 rng(12345);
  size_t want = (size_t)4 << 30;
  size_t freeb = 0, totb = 0;
  CK(cudaMemGetInfo(&freeb, &totb));
  if (want + ((size_t)2 << 30) > freeb) want = (size_t)1 << 30;
  CK(cudaMalloc(&cb.buf, want));
  cb.bytes = want;
  cb.flush_bytes = (size_t)512 << 20;
  CK(cudaMalloc(&cb.flush, cb.flush_bytes));
  CK(cudaMalloc(&cb.d_res, 8 * sizeof(long long)));
  CK(cudaMemset(cb.buf, 0, cb.bytes));
  const size_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;
  struct Cfg { const char* label; size_t span, stride; int mode; long long n; bool full_warm, flush; };
  std::vector<Cfg> cfgs = {
      {"L1_hit_8KiB", 8 * KiB, 128, 0, 200000, true, false},
      {"L1_hit_16KiB_stride32", 16 * KiB, 32, 0, 200000, true, false},
      {"L2_hit_8KiB_cg", 8 * KiB, 128, 1, 40000, true, false},
      {"L2_hit_1MiB_cg", 1 * MiB, 128, 1, 40000, true, false},
      {"L2_hit_4MiB_cg", 4 * MiB, 128, 1, 40000, true, false},
      {"L2_hit_8MiB_cg", 8 * MiB, 128, 1, 40000, true, false},
      {"L2_16MiB_cg", 16 * MiB, 128, 1, 40000, true, false},
      {"L2_20MiB_cg", 20 * MiB, 128, 1, 40000, true, false},
      {"L2_24MiB_cg", 24 * MiB, 128, 1, 40000, true, false},
      {"L2_28MiB_cg", 28 * MiB, 128, 1, 40000, true, false},
      {"L2_32MiB_cg", 32 * MiB, 128, 1, 40000, true, false},
      {"L2_40MiB_cg", 40 * MiB, 128, 1, 40000, true, false},
      {"L2_48MiB_cg", 48 * MiB, 128, 1, 40000, true, false},
      {"DRAM_64MiB_stride4KiB", 64 * MiB, 4 * KiB, 1, 8000, false, true},
      {"DRAM_256MiB_stride4KiB", 256 * MiB, 4 * KiB, 1, 8000, false, true},
      {"DRAM_1GiB_stride4KiB", 1 * GiB, 4 * KiB, 1, 8000, false, true},
      {"DRAM_1GiB_stride64KiB", 1 * GiB, 64 * KiB, 1, 8000, false, true},
      {"DRAM_1GiB_stride128B", 1 * GiB, 128, 1, 8000, false, true},
      {"DRAM_4GiB_stride4KiB", 4 * GiB, 4 * KiB, 1, 8000, false, true},
      {"DRAM_4GiB_stride2MiB_TLB", 4 * GiB, 2 * MiB, 1, 2000, false, true},
  };
  for (auto& c : cfgs) {
    try {
      if (c.span > cb.bytes) { record_error(std::string("latency:") + c.label, "skipped: buffer too small"); continue; }
      rows.push_back(chase(cb, c.label, c.span, c.stride, c.mode, c.n, c.full_warm, c.flush, 5, rng));
    } catch (std::exception& e) {
      record_error(std::string("latency:") + c.label, e.what());
    }
    g_root.a("latency_pointer_chase", rows);
    flush_json();
  }
  // shared memory
  try {
    long long n = 400000;
    std::vector<double> cyc, ns;
    for (int r = 0; r < 5; ++r) {
      smem_chase_kernel<<<1, 32>>>(4096, n, cb.d_res);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      long long h[3];
      CK(cudaMemcpy(h, cb.d_res, sizeof h, cudaMemcpyDeviceToHost));
      cyc.push_back((double)h[0] / n);
      ns.push_back((double)h[1] / n);
    }
    JObj j;
    j.s("label", "smem_chase_ld.shared.u32");
    j.s("note", "pure dependent ld.shared.u32 chain (each word holds the next word's shared address)");
    j.d("cycles_per_load_median", median(cyc));
    j.d("ns_per_load_median", median(ns));
    g_root.o("latency_shared_memory", j);
    std::printf("  latency smem chase: %.1f cycles %.1f ns\n", median(cyc), median(ns));
  } catch (std::exception& e) {
    record_error("latency:smem", e.what());
  }
  flush_json();
  cudaFree(cb.buf); cudaFree(cb.flush); cudaFree(cb.d_res); if (cb.d_order) cudaFree(cb.d_order);
}

static void section_bandwidth() {
  int sms = g_prop.multiProcessorCount;
  std::vector<JObj> rows;
  const size_t MiB = (size_t)1 << 20;
  size_t freeb = 0, totb = 0;
  CK(cudaMemGetInfo(&freeb, &totb));
  size_t big = (size_t)4 << 30;
  if (big + ((size_t)2 << 30) > freeb) big = (size_t)1 << 30;
  int4* buf = nullptr;
  CK(cudaMalloc(&buf, big));
  fill_kernel<<<4 * sms, 1024>>>((unsigned*)buf, big / 4, 0x9e3779b9u);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  int4* out = nullptr;
  CK(cudaMalloc(&out, (size_t)sms * 8 * 1024 * sizeof(int4)));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  struct Cfg { const char* label; size_t bytes; int passes; int bps; };
  std::vector<Cfg> cfgs = {
      {"L2_read_8MiB", 8 * MiB, 1000, 2},   {"L2_read_16MiB", 16 * MiB, 500, 2},
      {"L2_read_32MiB", 32 * MiB, 250, 2},  {"L2_read_16MiB_4x512", 16 * MiB, 500, 4},
      {"L2_read_16MiB_1x1024", 16 * MiB, 500, 1},
      {"DRAM_read_4GiB", big, 2, 2},        {"DRAM_read_4GiB_4x512", big, 2, 4},
  };
  for (auto& c : cfgs) {
    try {
      int bps = c.bps;
      int thr = bps == 4 ? 512 : 1024;
      if ((c.bytes / sizeof(int4)) & ((c.bytes / sizeof(int4)) - 1)) throw std::runtime_error("nvec not pow2");
      int grid = sms * bps;
      size_t nvec = c.bytes / sizeof(int4);
      read_bw_kernel<<<grid, thr>>>(buf, nvec, 1, out);  // warm (loads into L2)
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      std::vector<double> ms_v;
      for (int r = 0; r < 7; ++r) {
        CK(cudaEventRecord(e0));
        read_bw_kernel<<<grid, thr>>>(buf, nvec, c.passes, out);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        ms_v.push_back(ms);
      }
      double ms = median(ms_v);
      double bytes = (double)nvec * sizeof(int4) * c.passes;  // every int4 read once per pass
      double gbs = bytes / (ms * 1e-3) / 1e9;
      double best = *std::min_element(ms_v.begin(), ms_v.end());
      JObj j;
      j.s("label", c.label);
      j.s("load", "__ldcg int4 (ld.global.cg.v4)");
      j.i("buffer_bytes", (long long)(nvec * sizeof(int4)));
      j.i("passes", c.passes);
      j.i("grid", grid); j.i("block", thr);
      j.d("time_ms_median", ms);
      j.d("GBps_median", gbs);
      j.d("GBps_best", bytes / (best * 1e-3) / 1e9);
      rows.push_back(j);
      std::printf("  bandwidth %-24s %8.1f GB/s (median of 7; best %.1f)\n", c.label, gbs,
                  bytes / (best * 1e-3) / 1e9);
      std::fflush(stdout);
    } catch (std::exception& e) {
      record_error(std::string("bandwidth:") + c.label, e.what());
    }
    g_root.a("read_bandwidth", rows);
    flush_json();
  }
  cudaFree(buf); cudaFree(out);
  cudaEventDestroy(e0); cudaEventDestroy(e1);
}

static void section_ffma() {
  int sms = g_prop.multiProcessorCount;
  int grid = sms * 2, thr = 1024;
  float* out = nullptr;
  long long* clk = nullptr;
  CK(cudaMalloc(&out, (size_t)grid * thr * sizeof(float)));
  CK(cudaMalloc(&clk, 2 * sizeof(long long)));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  int iters = 8192;
  ffma_kernel<<<grid, thr>>>(out, 64, 0.9999f, 1e-4f, clk);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<double> tf, mhz;
  for (int r = 0; r < 5; ++r) {
    CK(cudaEventRecord(e0));
    ffma_kernel<<<grid, thr>>>(out, iters, 0.9999f, 1e-4f, clk);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    long long h[2];
    CK(cudaMemcpy(h, clk, sizeof h, cudaMemcpyDeviceToHost));
    double flops = 2.0 * 8 * 16 * (double)iters * grid * thr;
    tf.push_back(flops / (ms * 1e-3) / 1e12);
    mhz.push_back(h[1] > 0 ? 1e3 * (double)h[0] / (double)h[1] : NAN);
  }
  JObj j;
  j.s("kernel", "8 independent fmaf chains/thread, 16x unrolled, grid=2*SMs x 1024");
  j.i("iters", iters);
  j.d("fp32_TFLOPs_median", median(tf));
  j.d("sm_clock_MHz_from_clock64_over_globaltimer", median(mhz));
  j.d("fma_per_clk_per_SM_implied", median(tf) * 1e12 / 2.0 / (median(mhz) * 1e6) / sms);
  g_root.o("fp32_fma_throughput", j);
  flush_json();
  std::printf("  FP32 FMA: %.2f TFLOP/s at %.0f MHz (implied %.1f FMA/clk/SM)\n", median(tf), median(mhz),
              median(tf) * 1e12 / 2.0 / (median(mhz) * 1e6) / sms);
  cudaFree(out); cudaFree(clk);
  cudaEventDestroy(e0); cudaEventDestroy(e1);
}

int main(int argc, char** argv) {
  std::string tag = argc > 1 ? argv[1] : "gpu";
  std::string outdir = argc > 2 ? argv[2] : ".";
  g_json_path = outdir + "/device_probe_" + tag + ".json";
  g_root.s("tool", "validation/measure/device_probe.cu");
  g_root.s("gpu_tag", tag);
  {
    std::time_t t = std::time(nullptr);
    char b[64];
    std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    g_root.s("date_utc", b);
  }
  auto run = [&](const char* name, auto fn) {
    auto t0 = std::chrono::steady_clock::now();
    try { fn(); } catch (std::exception& e) { record_error(name, e.what()); }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[section %s: %.1f s]\n", name, s);
    std::fflush(stdout);
    flush_json();
  };
  run("props", [&] { section_props(); });
  run("occupancy_reference", [&] { section_occupancy(tag, outdir); });
  run("occupancy_runtime_check", [&] { section_occ_runtime(tag, outdir); });
  run("bandwidth", [&] { section_bandwidth(); });
  run("ffma", [&] { section_ffma(); });
  run("latency", [&] { section_latency(); });
  flush_json();
  std::printf("wrote %s (%zu errors)\n", g_json_path.c_str(), g_errors.size());
  return 0;
}
