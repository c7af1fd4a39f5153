#!/usr/bin/env python3
"""Compares the HTA analyses of `strobe summary --json` with HolisticTraceAnalysis
itself on the same libkineto trace.

usage: compare.py STROBE TRACE.json [TRACE.json ...]

HTA runs with include_last_profiler_step=True (strobe's choice, see
docs/analysis.md) and HTA_DISABLE_NS_ROUNDING=1. HTA's times are
microseconds as floats; strobe's are integer nanoseconds: equal means
within 1 ns, or within HTA's own rounding where HTA rounds (idle time per
stream to 0.01 us, percentages to 0.01 or 0.1). Kernel sequences are
compared for the ops "aten::block" (gen_trace.py --blocks), "ProfilerStep"
and "aten::" (HTA's operator_name; strobe's --seq-op); the critical path
of each step with HTA's include_last_profiler_step=True (HTA 0.5 then keeps
every GPU event, as strobe's steps do). Prints each comparison;
exits 1 on the first mismatch.
"""
import json
import warnings
import math
import os
import subprocess
import sys
import tempfile

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
import logging  # noqa: E402

logging.disable(logging.WARNING)
warnings.simplefilter("ignore")

from hta.trace_analysis import TraceAnalysis  # noqa: E402

checked = 0


def fail(msg):
    print("MISMATCH: " + msg)
    sys.exit(1)


def near(what, strobe, hta, tol):
    global checked
    checked += 1
    if strobe is None or hta is None or (isinstance(hta, float) and math.isnan(hta)):
        if not (strobe is None and (hta is None or math.isnan(hta))):
            fail("%s: strobe %r, HTA %r" % (what, strobe, hta))
        return
    if abs(strobe - hta) > tol:
        fail("%s: strobe %r, HTA %r (tolerance %r)" % (what, strobe, hta, tol))


def ns(us):
    return us * 1000.0


def nearest_rank(values, p):
    v = sorted(values)
    if not v:
        return None
    k = max(1, -(-p * len(v) // 100))
    return v[k - 1]


def compare_kseq(strobe, trace, ta, out_dir, op):
    """get_frequent_cuda_kernel_sequences(op) against summary --seq-op op:
    the same sequences in the same order, with the same counts and sums."""
    out = subprocess.run([strobe, "summary", "--json", "--top", "0", "--seq-op", op, trace], check=True,
                         capture_output=True, text=True).stdout
    mine = json.loads(out)["kernel_sequences"]
    df = ta.get_frequent_cuda_kernel_sequences(op, out_dir, top_k=1 << 30, visualize=False)
    if len(mine) != len(df):
        fail("%s sequences: strobe %d, HTA %d" % (op, len(mine), len(df)))
    for k, (m, (_, h)) in enumerate(zip(mine, df.iterrows())):
        pattern = "|".join([m["op"]] + [x["name"] for x in m["sequence"]])
        if pattern != h["pattern"]:
            fail("%s sequence %d: strobe %r, HTA %r" % (op, k, pattern[:200], h["pattern"][:200]))
        what = "%s sequence %d " % (op, k)
        near(what + "count", m["count"], h["count"], 0)
        near(what + "GPU time", m["gpu_ns"], ns(h["GPU kernel duration (us)"]), 1 + len(m["sequence"]))
        near(what + "CPU time", m["cpu_ns"], ns(h["CPU op duration (us)"]), m["count"])


def compare_critical_path(s, ta):
    """critical_path_analysis(annotation="ProfilerStep", instance_id=i) for
    each step: the path's length and its time by HTA's bound_by classes."""
    classes = (("cpu_ns", "cpu_bound"), ("gpu_compute_ns", "gpu_compute_bound"),
               ("gpu_comm_ns", "gpu_communication_bound"), ("kernel_gap_ns", "gpu_kernel_kernel_overhead"),
               ("launch_delay_ns", "gpu_kernel_launch_overhead"))
    for i, mine in enumerate(s["critical_path"]):
        g, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=i)
        if not ok:
            fail("critical path of step %d: HTA found none" % mine["step"])
        df = g.get_critical_path_breakdown()
        what = "critical path of step %d: " % mine["step"]
        near(what + "length", mine["length_ns"], ns(df.duration.sum()), 2)
        by = df.groupby("bound_by").duration.sum().to_dict()
        for key, theirs in classes:
            near(what + theirs, mine[key], ns(by.get(theirs, 0.0)), 2)


def compare(strobe, trace):
    global checked
    out = subprocess.run([strobe, "summary", "--json", "--top", "0", trace], check=True,
                         capture_output=True, text=True).stdout
    s = json.loads(out)
    with tempfile.TemporaryDirectory() as d:
        link = os.path.join(d, "rank0.json")
        os.symlink(os.path.abspath(trace), link)
        ta = TraceAnalysis(trace_files={0: link}, trace_dir=d, include_last_profiler_step=False)

        tb = ta.get_temporal_breakdown(visualize=False)
        (dev,) = s["temporal_breakdown"]
        row = tb.iloc[0]
        near("kernel time", dev["kernel_time_ns"], ns(row["kernel_time(us)"]), 1)
        near("idle time", dev["idle_ns"], ns(row["idle_time(us)"]), 1)
        near("compute time", dev["compute_ns"], ns(row["compute_time(us)"]), 1)
        near("non-compute time", dev["non_compute_ns"], ns(row["non_compute_time(us)"]), 1)
        near("idle %", round(dev["idle_pct"], 2), row["idle_time_pctg"], 0.0100001)
        near("compute %", round(dev["compute_pct"], 2), row["compute_time_pctg"], 0.0100001)
        near("non-compute %", round(dev["non_compute_pct"], 2), row["non_compute_time_pctg"], 0.0100001)

        ov = ta.get_comm_comp_overlap(visualize=False).iloc[0]["comp_comm_overlap_pctg"]
        mine = dev["comm_comp_overlap_pct"]
        near("comm-comp overlap %", None if mine is None else round(mine, 2), ov, 0.0100001)

        # HTA truncates each interval of its kernel type time to a whole unit
        # (.astype(int)): give it nanoseconds, so that is exact.
        df = ta.t.get_trace(0)
        for col in ("ts", "dur", "end"):
            if col in df.columns:
                df[col] = (df[col] * 1000).round()
        types, names = ta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True,
                                                   num_kernels=1 << 30, duration_ratio=1.0)
        for col in ("ts", "dur", "end"):
            if col in df.columns:
                df[col] = df[col] / 1000
        for col in ("sum", "sum (us)", "max (us)", "min (us)", "mean (us)", "stddev"):
            for t in (types, names):
                if col in t.columns:
                    t[col] = t[col] / 1000
        st = {r["kernel_type"]: r for r in s["kernel_type_time"]}
        for _, r in types.iterrows():
            if r["sum"] == 0:
                continue
            if r["kernel_type"] not in st:
                fail("kernel type %s: not in strobe" % r["kernel_type"])
            near("kernel type time " + r["kernel_type"], st[r["kernel_type"]]["time_ns"], ns(r["sum"]), 1)
            near("kernel type % " + r["kernel_type"], round(st[r["kernel_type"]]["pct"], 1), r["percentage"],
                 0.1000001)
        if len(st) != sum(1 for _, r in types.iterrows() if r["sum"] > 0):
            fail("kernel types: strobe %s, HTA %s" % (sorted(st), list(types["kernel_type"])))
        sk = {(r["kernel_type"], r["name"]): r for r in s["kernels_by_type"] if r["kernel_type"] != "OTHER"}
        if len(sk) != len(names):
            fail("kernels by type: strobe %d rows, HTA %d" % (len(sk), len(names)))
        for _, r in names.iterrows():
            k = sk.get((r["kernel_type"], r["name"]))
            if k is None:
                fail("kernel %s %s: not in strobe" % (r["kernel_type"], r["name"]))
            what = "kernel %s: " % r["name"][:30]
            near(what + "sum", k["sum_ns"], ns(r["sum (us)"]), 1)
            near(what + "max", k["max_ns"], ns(r["max (us)"]), 1)
            near(what + "min", k["min_ns"], ns(r["min (us)"]), 1)
            near(what + "mean", k["mean_ns"], ns(r["mean (us)"]), 1)
            near(what + "std", k["std_ns"], ns(r["stddev"]), 1)

        idle, _ = ta.get_idle_time_breakdown(visualize=False)
        si = {r["stream"]: r for r in s["idle_time"]}
        hta_streams = set(int(x) for x in idle["stream"])
        if set(si) != hta_streams:
            fail("idle streams: strobe %s, HTA %s" % (sorted(si), sorted(hta_streams)))
        for stream, r in si.items():
            for cat, key in (("host_wait", "host_wait_ns"), ("kernel_wait", "kernel_wait_ns"),
                             ("other", "other_ns")):
                h = idle[(idle["stream"] == stream) & (idle["idle_category"] == cat)]["idle_time"].sum()
                near("stream %d %s" % (stream, cat), r[key], ns(h), 5.0001)

        ls = ta.get_cuda_kernel_launch_stats(ranks=[0], visualize=False)[0]
        (l,) = s["launch_stats"] or [None]
        if l is None:
            if len(ls):
                fail("launch stats: HTA has %d launches, strobe none" % len(ls))
        else:
            near("launches", l["launches"], len(ls), 0)
            near("short kernels", l["short_kernels"], int((ls["gpu_duration"] < ls["cpu_duration"]).sum()), 0)
            near("runtime outliers", l["runtime_outliers"], int((ls["cpu_duration"] > 50).sum()), 0)
            near("launch delay outliers", l["delay_outliers"], int((ls["launch_delay"] > 100).sum()), 0)
            delays = [ns(x) for x in ls["launch_delay"]]
            near("launch delay p50", l["delay_p50_ns"], nearest_rank(delays, 50), 1)
            near("launch delay p99", l["delay_p99_ns"], nearest_rank(delays, 99), 1)
            near("launch delay max", l["delay_max_ns"], max(delays), 1)
            near("launch CPU time", l["cpu_ns"], ns(ls["cpu_duration"].sum()), 1)
            near("launch GPU time", l["gpu_ns"], ns(ls["gpu_duration"].sum()), 1)

        ql = ta.get_queue_length_summary(ranks=[0])
        sq = {r["stream"]: r for r in s["queue_length"]}
        hq = {} if ql is None else {int(idx[1]): row for idx, row in ql.iterrows()}
        if set(sq) != set(hq):
            fail("queue streams: strobe %s, HTA %s" % (sorted(sq), sorted(hq)))
        for stream, r in sq.items():
            h = hq[stream]
            near("queue %d count" % stream, r["count"], h[("queue_length", "count")], 0)
            near("queue %d mean" % stream, r["mean"], h[("queue_length", "mean")], 1e-9)
            near("queue %d p50" % stream, r["p50"], h[("queue_length", "50%")], 1e-9)
            near("queue %d max" % stream, r["max"], h[("queue_length", "max")], 0)
        bw = ta.get_memory_bw_summary(ranks=[0])
        sb = {r["kind"]: r for r in s["memory_bandwidth"]}
        hb = {} if bw is None else {idx[1]: row for idx, row in bw.iterrows()}
        if set(sb) != set(hb):
            fail("memory bandwidth kinds: strobe %s, HTA %s" % (sorted(sb), sorted(hb)))
        for kind, r in sb.items():
            h = hb[kind]
            near("%s count" % kind, r["count"], h[("memory_bw_gbps", "count")], 0)
            for mine, theirs in (("mean", "mean"), ("p50", "50%"), ("min", "min"), ("max", "max")):
                want = h[("memory_bw_gbps", theirs)]
                near("%s %s GB/s" % (kind, mine), r[mine + "_gb_per_s"], want, 1e-9 * max(1.0, abs(want)))
        for op in ("aten::block", "ProfilerStep", "aten::"):
            compare_kseq(strobe, trace, ta, d, op)
        compare_critical_path(s, TraceAnalysis(trace_files={0: link}, trace_dir=d, include_last_profiler_step=True))
    print("%s: %d numbers equal to HTA's" % (trace, checked))
    checked = 0


def main():
    strobe = sys.argv[1]
    for trace in sys.argv[2:]:
        compare(strobe, trace)


if __name__ == "__main__":
    main()
