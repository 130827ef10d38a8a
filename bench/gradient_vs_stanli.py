#!/usr/bin/env python3
"""Times stanli's log_prob_grad for the posteriors given on stdin (used by
bench/src/bin/gradient_vs_stanli.rs, which times hazel in the same run).

stdin: JSON list of {"name", "program", "data", "q"}; stdout: JSON list of
{"name", "ns_per_grad"} (or {"name", "error"}). Each timing is the median of 5 batches,
each batch long enough to take about 0.1 s. The Python call overhead of one
log_prob_grad call (about a microsecond) is included, as it is for any Python user.
"""
import json
import sys
import time


def time_call(f, target_s=0.1):
    f()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        dt = time.perf_counter() - t0
        if dt >= target_s / 4 or n >= 1 << 22:
            break
        n *= 4
    reps = max(1, int(n * target_s / max(dt, 1e-9)))
    batches = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        batches.append((time.perf_counter() - t0) / reps)
    batches.sort()
    return batches[2] * 1e9


def main():
    try:
        import numpy as np
        import stanli
    except ImportError as e:
        print(json.dumps({"unavailable": str(e)}))
        return
    jobs = json.load(sys.stdin)
    out = []
    for job in jobs:
        try:
            model = stanli.Model(stan_file=job["program"], data=job["data"])
            q = np.asarray(job["q"], dtype=float)
            ns = time_call(lambda: model.log_prob_grad(q))
            out.append({"name": job["name"], "ns_per_grad": ns})
        except Exception as e:  # report and continue with the next posterior
            out.append({"name": job["name"], "error": str(e)})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
