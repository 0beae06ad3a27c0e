"""The main job as a user meets it: examples/fashion_mnist run in a terminal (a pseudo-terminal, so
its dashboard is the live view), timed from outside the process. Not a benchmark of kiln's
kernels: what this measures is how the Learner's loop behaves around them.

    /usr/bin/python3 bench/learner_harness.py [--program build/examples/fashion_mnist]
        [--epochs 1] [--interrupt-at SECONDS] [--twin] [--device cpu]

Prints one JSON line per run to stdout:
  {"run": "kiln", "epochs": 1, "seconds": 52.1, "peak_rss_mib": 610, "frames": 480,
   "first_frame_s": 0.4, "max_gap_s": 0.31, "p99_gap_s": 0.26, "interrupt_to_exit_s": 0.42}
- frames: writes to the terminal (the live view writes each frame in one write);
  first_frame_s: start to the first progress frame; max_gap_s / p99_gap_s: the longest and the
  99th-percentile time between frames, the first 2 s (start-up) left out; gaps_over_0.5s: when
  each longer gap began and how long it was.
- interrupt_to_exit_s (with --interrupt-at): SIGINT sent at that time, to the process's exit
  (it finishes its step, writes a checkpoint and exits).
- peak_rss_mib: the process's peak resident memory (getrusage of the child).
With --twin, bench/fashion_mnist_twin.py runs the same epochs after it: {"run": "torch", ...}
with its seconds and peak_rss_mib.
"""
import argparse
import json
import os
import pty
import select
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_in_terminal(argv, env, interrupt_at=None):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, env)
    start = time.monotonic()
    writes, interrupted_at = [], None
    status = None
    while status is None:
        now = time.monotonic() - start
        if interrupt_at is not None and interrupted_at is None and now >= interrupt_at:
            os.kill(pid, signal.SIGINT)
            interrupted_at = now
        ready, _, _ = select.select([fd], [], [], 0.01)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if chunk:
                writes.append((time.monotonic() - start, chunk))
                continue
        done, st, usage = os.wait4(pid, os.WNOHANG)
        if done:
            status = (st, usage)
    end = time.monotonic() - start
    os.close(fd)
    st, usage = status
    return {"writes": writes, "seconds": end, "exit": os.waitstatus_to_exitcode(st),
            "peak_rss_mib": round(usage.ru_maxrss / 1024), "interrupted_at": interrupted_at}


def frame_stats(writes):
    times = [t for t, chunk in writes if b"elapsed" in chunk]  # each live frame's header says so
    if not times:
        return {}
    steady = [t for t in times if t >= 2.0]
    gaps = sorted(b - a for a, b in zip(steady, steady[1:]))
    out = {"frames": len(times), "first_frame_s": round(times[0], 2)}
    if gaps:
        out["max_gap_s"] = round(gaps[-1], 3)
        out["p99_gap_s"] = round(gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))], 3)
        out["gaps_over_0.5s"] = [[round(a, 1), round(b - a, 2)] for a, b in zip(steady, steady[1:]) if b - a > 0.5]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", default="build/examples/fashion_mnist")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--interrupt-at", type=float)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--twin", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as run_dir:
        env = dict(os.environ, KILN_DASHBOARD="live", COLUMNS="100", LINES="40")
        argv = [args.program, "--epochs", str(args.epochs), "--run-dir", run_dir, "--no-resume",
                "--device", args.device]
        r = run_in_terminal(argv, env, args.interrupt_at)
        line = {"run": "kiln", "epochs": args.epochs, "seconds": round(r["seconds"], 2),
                "exit": r["exit"], "peak_rss_mib": r["peak_rss_mib"], **frame_stats(r["writes"])}
        if r["interrupted_at"] is not None:
            line["interrupted_at_s"] = round(r["interrupted_at"], 2)
            line["interrupt_to_exit_s"] = round(r["seconds"] - r["interrupted_at"], 3)
        print(json.dumps(line), flush=True)

    if args.twin:
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.join(HERE, "fashion_mnist_twin.py"),
                                          "--epochs", str(args.epochs)])
        _, st, usage = os.wait4(pid, 0)
        print(json.dumps({"run": "torch", "epochs": args.epochs, "seconds": round(time.monotonic() - start, 2),
                          "exit": os.waitstatus_to_exitcode(st), "peak_rss_mib": round(usage.ru_maxrss / 1024)}),
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
