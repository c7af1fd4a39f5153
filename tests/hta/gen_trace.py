#!/usr/bin/env python3
"""Writes a libkineto-layout training trace: ProfilerStep#N ranges on the
main thread, cpu_ops launching kernels, copies and NCCL kernels on two
streams of GPU 0 (linked by "correlation" args and ac2g flows), stream
syncs, and work launched after the last step.

usage: gen_trace.py OUT.json [--steps N] [--seed S] [--slow-step K]
                              [--kernels-per-step K] [--scale F]
                              [--extra-kernel NAME] [--compact] [--blocks K]
                              [--cpu-step K]

Times are microseconds with three decimals (whole nanoseconds), as
libkineto writes them. The same arguments give the same file. --scale
multiplies every compute kernel's duration and --extra-kernel adds one
more kernel name to the rotation (two traces to compare with strobe diff).
--blocks K wraps each K consecutive cpu_ops in an "aten::block" cpu_op (the
roots of repeated kernel sequences) and puts 300 ns between cpu_ops.
--cpu-step K makes step K CPU-bound: a 3 ms cpu_op launches its kernel at
its end.
"""
import argparse
import json
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slow-step", type=int, default=3)
    ap.add_argument("--kernels-per-step", type=int, default=12)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--extra-kernel", default="")
    ap.add_argument("--compact", action="store_true", help="no indentation (benchmarks)")
    ap.add_argument("--cpu-step", type=int, default=-1,
                    help="this step spends 3 ms in one cpu_op before its last launch (a CPU-bound step)")
    ap.add_argument("--blocks", type=int, default=0,
                    help="wrap each run of this many cpu_ops in an aten::block cpu_op (kernel sequences)")
    args = ap.parse_args()
    rnd = random.Random(args.seed)

    pid, tid, gpu = 4242, 4242, 0
    ev = []
    corr = [1000]

    def us(ns):
        return round(ns / 1000.0, 3)

    def x(cat, name, p, t, ts, dur, a=None):
        e = {"ph": "X", "cat": cat, "name": name, "pid": p, "tid": t, "ts": us(ts), "dur": us(dur)}
        if a is not None:
            e["args"] = a
        ev.append(e)

    gpu_free = {7: 0, 20: 0}

    def launch(t_cpu, name, cat, stream, dur_ns, rt="cudaLaunchKernel", extra=None, ext=1):
        corr[0] += 1
        c = corr[0]
        rt_dur = rnd.randint(2000, 6000)
        if rnd.random() < 0.05:
            rt_dur = 70000  # a slow launch call (HTA's runtime outlier)
        x("cuda_runtime", rt, pid, tid, t_cpu, rt_dur, {"External id": ext, "cbid": 211, "correlation": c})
        ev.append({"ph": "s", "id": c, "pid": pid, "tid": tid, "ts": us(t_cpu), "cat": "ac2g", "name": "ac2g"})
        start = max(t_cpu + rt_dur + rnd.randint(1000, 9000), gpu_free[stream] + rnd.choice([0, 500, 3000, 45000]))
        a = {"External id": ext, "device": gpu, "context": 1, "stream": stream, "correlation": c}
        if extra:
            a.update(extra)
        x(cat, name, gpu, stream, start, dur_ns, a)
        ev.append({"ph": "f", "id": c, "pid": gpu, "tid": stream, "ts": us(start), "cat": "ac2g",
                   "name": "ac2g", "bp": "e"})
        gpu_free[stream] = start + dur_ns
        return t_cpu + rt_dur, start + dur_ns

    kernels = ["void gemm_kernel<float, 128>(float const*, float*)", "softmax_fwd_kernel",
               "elementwise_add_kernel", "layer_norm_kernel"]
    if args.extra_kernel:
        kernels.append(args.extra_kernel)
    t = 1_000_000
    for step in range(args.steps):
        step_start = t
        cpu = t + 5000
        last_gpu = 0
        n = args.kernels_per_step
        block_start = cpu
        for k in range(n):
            op_start = cpu
            name = kernels[(k + step) % len(kernels)]
            dur = int(rnd.randint(8000, 40000) * args.scale)
            if step == args.slow_step:
                dur *= 4
            cpu += rnd.randint(1000, 4000)
            cpu, end = launch(cpu, name, "kernel", 7, dur)
            last_gpu = max(last_gpu, end)
            cpu += rnd.randint(1000, 60000 if k % 5 == 0 else 3000)
            x("cpu_op", "aten::op%d" % (k % 3), pid, tid, op_start, cpu - op_start, {"External id": k})
            if args.blocks:  # apart: HTA's float ends would nest ops that touch
                cpu += 300
            if args.blocks and (k + 1) % args.blocks == 0:
                x("cpu_op", "aten::block", pid, tid, block_start, cpu - block_start, {"External id": 100 + k})
                cpu += 500
                block_start = cpu
        if step == args.cpu_step:
            heavy = cpu + 1000
            cpu, end = launch(heavy + 3_000_000, "layer_norm_kernel", "kernel", 7, 20000)
            x("cpu_op", "aten::cpu_heavy", pid, tid, heavy, cpu + 1000 - heavy, {"External id": 99})
            cpu += 20000  # its kernel starts before the next launch: HTA counts a launch delay
            last_gpu = max(last_gpu, end)
        # a copy and an all-reduce overlapping the next compute
        cpu += 2000
        copy_ns = rnd.randint(3000, 9000)
        cpu, end = launch(cpu, "Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", 7, copy_ns, rt="cudaMemcpyAsync",
                          extra={"bytes": 1048576, "memory bandwidth (GB/s)": 1048576 / copy_ns})
        cpu, end2 = launch(cpu + 500, "Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", 20, 4000,
                           rt="cudaMemcpyAsync", extra={"bytes": 65536, "memory bandwidth (GB/s)": 16.384})
        end = max(end, end2)
        last_gpu = max(last_gpu, end)
        cpu += 1000
        cpu, end = launch(cpu, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                          "kernel", 20, rnd.randint(30000, 90000))
        last_gpu = max(last_gpu, end)
        cpu += 1000
        cpu, end = launch(cpu, "elementwise_add_kernel", "kernel", 7, int(rnd.randint(20000, 50000) * args.scale))
        last_gpu = max(last_gpu, end)
        # the step waits for the GPU
        corr[0] += 1
        sync_start = cpu + 1000
        sync_end = max(sync_start + 3000, last_gpu + 2000)
        x("cuda_runtime", "cudaStreamSynchronize", pid, tid, sync_start, sync_end - sync_start,
          {"External id": 0, "cbid": 131, "correlation": corr[0]})
        x("cuda_sync", "Stream Sync", gpu, 1000007, max(sync_start, last_gpu), 1500,
          {"cuda_sync_kind": "Stream Sync", "stream": 7, "correlation": corr[0], "device": 0, "context": 1})
        t = sync_end + 3000
        x("user_annotation", "ProfilerStep#%d" % (step + 10), pid, tid, step_start, t - step_start,
          {"External id": 0})
        t += rnd.randint(2000, 8000)
    # work after the last step (HTA drops it)
    launch(t + 1000, "softmax_fwd_kernel", "kernel", 7, 15000)
    ev.sort(key=lambda e: (e["ts"], e.get("ph") != "X"))
    meta = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": "thread %d (python)" % tid}},
        {"ph": "M", "name": "process_name", "pid": gpu, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": gpu, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": gpu, "tid": 7, "args": {"name": "stream 7 "}},
        {"ph": "M", "name": "thread_name", "pid": gpu, "tid": 20, "args": {"name": "stream 20 "}},
    ]
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Fake GPU"}],
           "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
           "traceEvents": meta + ev, "displayTimeUnit": "ms", "baseTimeNanoseconds": 1700000000000000000}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=None if args.compact else 1, separators=(",", ":") if args.compact else None)


if __name__ == "__main__":
    main()
