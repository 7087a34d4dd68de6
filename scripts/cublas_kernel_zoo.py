#!/usr/bin/env python3
"""cublas_kernel_zoo.py: which cuBLAS kernel ran for each 16-bit GEMM whose rows are not 16-byte
multiples, across the random op sets (validation/data/ops{3,4,5}_<gpu>.json).

One line per measured instance: op, M, N, K, bias, the alignment (elements) K and N allow, the
kernel family (cutlass_75_tensorop align1, cutlass_80_tensorop align2/4, the wmma kernels,
gemmSN, gemv, dot_kernel, ...), its grid (z = split-K slices for the CUTLASS kernels), whether a
splitKreduce kernel (parallel split) or a memset (serial split) came with it, and the tile.
Reading aid for the kernel-choice rules in models/gemm_model.cpp; it includes held-out rows, so
do not fit to its output (issue 16's sets 4 and 5 are held out entirely).

Usage: python3 scripts/cublas_kernel_zoo.py [h100|h200]
"""
import collections
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAMILIES = ['nvjet', 'cutlass_75_tensorop', 'cutlass_80_tensorop', 'cutlass_80_wmma',
            'cutlass_75_wmma', 'gemmSN_NN', 'gemmSN_TN', 'gemvx', 'gemvNSP', 'magma', 'dot_kernel',
            'cutlass_80_simt', 'sm80_xmma', 'sm90_xmma', 'splitKreduce', 'Memset', 'elementwise']


def family(name):
    for f in FAMILIES:
        if f in name:
            return f
    return re.sub(r'<.*', '', name)[:30]


def alignment(x):
    return max(a for a in (1, 2, 4, 8) if x % a == 0)


def main():
    gpu = sys.argv[1] if len(sys.argv) > 1 else 'h100'
    rows = []
    for st in ('3', '4', '5'):
        path = os.path.join(ROOT, 'validation', 'data', f'ops{st}_{gpu}.json')
        if not os.path.exists(path):
            continue
        for r in json.load(open(path))['ops']:
            if r['op'] not in ('matmul', 'linear') or r['dtype'] not in ('bf16', 'fp16'):
                continue
            p = r['params']
            if p['K'] % 8 == 0 and p['N'] % 8 == 0:
                continue
            ks = r.get('kernels', [])
            main_k = [k for k in ks if family(k['name']) not in ('splitKreduce', 'Memset', 'elementwise')]
            if not main_k:
                continue
            m = main_k[0]
            tile = re.search(r'gemm_\w+?_(\d+x\d+)', m['name'])
            rows.append((st, r['op'], r['dtype'], p['M'], p['N'], p['K'], p.get('bias', 0),
                         family(m['name']), m['grid'],
                         any(family(k['name']) == 'splitKreduce' for k in ks),
                         any(family(k['name']) == 'Memset' for k in ks),
                         tile.group(1) if tile else ''))
    print(collections.Counter(r[7] for r in rows))
    for r in sorted(rows, key=lambda r: (r[7], r[3])):
        st, op, dt, M, N, K, bias, fam, grid, red, mem, tile = r
        print(f"set{st} {op:6s} {dt} M={M:5d} N={N:5d} K={K:5d} bias={bias} alignK={alignment(K)} "
              f"alignN={alignment(N)} {fam:20s} {str(grid):14s} reduce={int(red)} memset={int(mem)} {tile}")


if __name__ == '__main__':
    main()
