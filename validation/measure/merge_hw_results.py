#!/usr/bin/env python3
"""merge_hw_results.py: merge one GPU's probe outputs into validation/data/hw_<gpu>.json.

Usage: python3 merge_hw_results.py --gpu h100 --src <dir with run_hw_probe.sh outputs> \
           --dst validation/data [--repeat <dir of an earlier run of the same GPU>]

Inputs (from run_hw_probe.sh): device_probe_<gpu>.json, hw_probe_<gpu>.json,
provenance_<gpu>.txt. Output: <dst>/hw_<gpu>.json with
  provenance   device, driver, CUDA, torch, date, scripts, nvidia-smi text
  summary      the key figures with units in the key names (derived, no new data)
  device_probe the full device_probe.cu result
  hw_probe     the full hw_probe.py result
  repeat_run   (optional) the same summary from an earlier run, for run-to-run spread
"""
import argparse
import json
import os


def get(d, *path):
    for p in path:
        if isinstance(d, dict) and p in d:
            d = d[p]
        elif isinstance(d, list) and isinstance(p, int) and p < len(d):
            d = d[p]
        else:
            return None
    return d


def lat(dp, label, key):
    for r in dp.get("latency_pointer_chase", []):
        if r.get("label") == label:
            return r.get(key)
    return None


def bw(dp, label):
    for r in dp.get("read_bandwidth", []):
        if r.get("label") == label:
            return r.get("GBps_median")
    return None


def summarize(dp, hp):
    s = {}
    props = dp.get("cudaDeviceProp", {})
    attrs = dp.get("cudaDeviceGetAttribute", {})
    s["sm_count"] = props.get("multiProcessorCount")
    s["l2_bytes"] = props.get("l2CacheSize")
    s["smem_per_sm_bytes"] = props.get("sharedMemPerMultiprocessor")
    s["smem_per_block_optin_bytes"] = props.get("sharedMemPerBlockOptin")
    s["reserved_smem_per_block_bytes"] = props.get("reservedSharedMemPerBlock")
    s["regs_per_sm"] = props.get("regsPerMultiprocessor")
    s["max_threads_per_sm"] = props.get("maxThreadsPerMultiProcessor")
    s["max_blocks_per_sm"] = props.get("maxBlocksPerMultiProcessor")
    s["total_global_mem_bytes"] = props.get("totalGlobalMem")
    s["memory_bus_width_bits"] = props.get("memoryBusWidth")
    s["attr_clock_rate_kHz"] = attrs.get("cudaDevAttrClockRate_kHz")
    s["attr_memory_clock_rate_kHz"] = attrs.get("cudaDevAttrMemoryClockRate_kHz")
    for lab, key in (
        ("L1_hit_8KiB", "lat_l1_hit"),
        ("L2_hit_8KiB_cg", "lat_l2_hit_8KiB"),
        ("L2_hit_4MiB_cg", "lat_l2_hit_4MiB"),
        ("L2_16MiB_cg", "lat_l2_16MiB"),
        ("L2_32MiB_cg", "lat_l2_32MiB"),
        ("L2_48MiB_cg", "lat_l2_48MiB"),
        ("DRAM_1GiB_stride4KiB", "lat_dram_1GiB_4KiB_stride"),
        ("DRAM_1GiB_stride64KiB", "lat_dram_1GiB_64KiB_stride"),
        ("DRAM_4GiB_stride2MiB_TLB", "lat_dram_4GiB_2MiB_stride"),
    ):
        s[key + "_cycles"] = lat(dp, lab, "cycles_per_load_median")
        s[key + "_ns"] = lat(dp, lab, "ns_per_load_median")
    s["lat_smem_cycles"] = get(dp, "latency_shared_memory", "cycles_per_load_median")
    s["lat_smem_ns"] = get(dp, "latency_shared_memory", "ns_per_load_median")
    s["l2_read_bw_16MiB_GBps"] = bw(dp, "L2_read_16MiB")
    s["l2_read_bw_32MiB_GBps"] = bw(dp, "L2_read_32MiB")
    s["dram_read_bw_ldcg_kernel_4GiB_GBps"] = bw(dp, "DRAM_read_4GiB")
    s["fp32_fma_TFLOPs"] = get(dp, "fp32_fma_throughput", "fp32_TFLOPs_median")
    s["fp32_fma_kernel_sm_clock_MHz"] = get(dp, "fp32_fma_throughput", "sm_clock_MHz_from_clock64_over_globaltimer")
    s["torch_copy_2GiB_read_plus_write_GBps"] = get(hp, "dram_bandwidth", "copy_2GiB_fp32",
                                                    "GBps_read_plus_write_median")
    s["torch_fill_2GiB_write_GBps"] = get(hp, "dram_bandwidth", "fill_2GiB_fp32_write_only", "GBps_median")
    s["torch_sum_2GiB_bf16_read_GBps"] = get(hp, "dram_bandwidth", "sum_2GiB_bf16_read", "GBps_median")
    s["torch_amax_2GiB_bf16_read_GBps"] = get(hp, "dram_bandwidth", "amax_2GiB_bf16_read", "GBps_median")
    for k in ("bf16_8192", "fp16_8192", "tf32_8192", "fp32_notf32_4096", "fp8_e4m3_8192", "fp8_e4m3_8192_fast_accum",
              "bf16_1024", "bf16_2048", "bf16_4096"):
        s[f"matmul_{k}_TFLOPs"] = get(hp, "matmul", k, "TFLOPs_median")
    s["launch_eager_wall_us_per_op"] = get(hp, "launch_costs", "eager_wall_us_per_op_median")
    s["launch_graph_replay_us_per_op"] = get(hp, "launch_costs", "graph_replay_us_per_op_median")
    s["launch_eager_kernel_duration_us"] = get(hp, "launch_costs", "profiler_eager", "duration_us_median")
    s["launch_eager_gap_us"] = get(hp, "launch_costs", "profiler_eager", "gap_us_median")
    s["launch_graph_kernel_duration_us"] = get(hp, "launch_costs", "profiler_graph_replay", "duration_us_median")
    s["launch_graph_gap_us"] = get(hp, "launch_costs", "profiler_graph_replay", "gap_us_median")
    s["clock_idle_context_open_MHz"] = get(hp, "idle_clock", "sm_mhz_median")
    s["clock_sustained_bf16_matmul_MHz"] = get(hp, "sustained_clocks", "bf16_matmul_8192", "sm_mhz_median")
    s["power_sustained_bf16_matmul_W"] = get(hp, "sustained_clocks", "bf16_matmul_8192", "power_w_median")
    s["sustained_bf16_matmul_TFLOPs"] = get(hp, "sustained_clocks", "bf16_matmul_8192", "TFLOPs_sustained")
    s["clock_sustained_elementwise_add_MHz"] = get(hp, "sustained_clocks", "elementwise_add_1GiB", "sm_mhz_median")
    s["sustained_elementwise_add_GBps"] = get(hp, "sustained_clocks", "elementwise_add_1GiB", "GBps_sustained")
    s["clock_sustained_sin_MHz"] = get(hp, "sustained_clocks", "sin_32MiB", "sm_mhz_median")
    s["nvml_max_sm_MHz"] = get(hp, "nvml_static", "max_sm_mhz")
    s["nvml_max_mem_MHz"] = get(hp, "nvml_static", "max_mem_mhz")
    s["nvml_power_limit_W"] = get(hp, "nvml_static", "power_limit_w")
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--repeat", default=None)
    a = ap.parse_args()
    dp = json.load(open(os.path.join(a.src, f"device_probe_{a.gpu}.json")))
    hp = json.load(open(os.path.join(a.src, f"hw_probe_{a.gpu}.json")))
    ptxt = open(os.path.join(a.src, f"provenance_{a.gpu}.txt")).read()
    hprov = hp.get("provenance", {})
    prov = {
        "device_name": hprov.get("device_name") or get(dp, "cudaDeviceProp", "name"),
        "gpu_tag": a.gpu,
        "driver_version": hprov.get("driver_version"),
        "cuda_driver_api_version": get(dp, "versions", "cudaDriverGetVersion"),
        "cuda_runtime_version": get(dp, "versions", "cudaRuntimeGetVersion"),
        "nvcc": hprov.get("nvcc"),
        "torch_version": hprov.get("torch_version"),
        "torch_cuda": hprov.get("torch_cuda"),
        "python": hprov.get("python"),
        "os_kernel": hprov.get("platform"),
        "date_utc_device_probe": dp.get("date_utc"),
        "date_utc_hw_probe": hprov.get("date_utc"),
        "nvidia_smi_query": hprov.get("nvidia_smi_query"),
        "machine": "workplace-lent Firecracker microVM with one GPU (16 CPU cores); GPU settings left as found",
        "scripts": ["validation/measure/run_hw_probe.sh", "validation/measure/device_probe.cu",
                    "validation/measure/occupancy_grid.h", "validation/measure/hw_probe.py",
                    "validation/measure/merge_hw_results.py"],
        "provenance_txt": ptxt.splitlines(),
    }
    out = {"provenance": prov, "summary": summarize(dp, hp), "device_probe": dp, "hw_probe": hp}
    if a.repeat:
        try:
            rdp = json.load(open(os.path.join(a.repeat, f"device_probe_{a.gpu}.json")))
            rhp = json.load(open(os.path.join(a.repeat, f"hw_probe_{a.gpu}.json")))
            out["repeat_run"] = {
                "note": "earlier run of the same script on the same machine lease (its hw_probe dram_bandwidth "
                        "section failed on a script bug fixed before the main run); summary only",
                "date_utc": rdp.get("date_utc"),
                "summary": summarize(rdp, rhp),
                "errors": {"device_probe": rdp.get("errors"), "hw_probe": [e.get("error") for e in rhp.get("errors", [])]},
            }
        except Exception as e:  # noqa
            out["repeat_run"] = {"error": repr(e)}
    path = os.path.join(a.dst, f"hw_{a.gpu}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)
    for k, v in out["summary"].items():
        print(f"  {k:45s} {v}")


if __name__ == "__main__":
    main()
