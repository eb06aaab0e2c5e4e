#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Writes docs/benchmarks.md and its PNG figures from the JSON-lines results of bench/run.sh.

    bench/report.py --results docs/benchmarks/results.jsonl --md docs/benchmarks.md \
        --png-dir docs/benchmarks [--baseline OLD_RESULTS.jsonl]

Every number in the report comes from the results file: one JSON object per measured run
("part" says what it is), plus "meta", "cmd" and "status" records. Values are medians over the
runs with the spread (min-max); ratios are ratios of medians measured in the same run. With
--baseline the ratio table gets a column computed the same way from an earlier results file
(before / after an optimisation).
"""
import argparse
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SIZE_NAMES = {4096: "4 KB", 65536: "64 KB", 1048576: "1 MB", 16777216: "16 MB"}
TARGET_FRACTION = 0.9
TARGET_IPP = 150


def size_name(n):
    if n in SIZE_NAMES:
        return SIZE_NAMES[n]
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10} KB"
    return f"{n} B"


def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class Agg:
    """Median and spread of one quantity over runs."""

    def __init__(self, values):
        self.values = sorted(v for v in values if num(v))
        self.n = len(self.values)
        self.median = statistics.median(self.values) if self.values else None
        self.min = self.values[0] if self.values else None
        self.max = self.values[-1] if self.values else None

    def fmt(self, digits=2, spread=True):
        if self.median is None:
            return "—"
        s = f"{self.median:.{digits}f}"
        if spread and self.n > 1:
            s += f" ({self.min:.{digits}f}–{self.max:.{digits}f})"
        return s


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_ratio(r, digits=2):
    if r is None:
        return "—"
    if 0 < abs(r) < 0.1:
        return f"{r:.2g}"
    return f"{r:.{digits}f}"


class Results:
    def __init__(self, path):
        self.records = []
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    self.records.append(json.loads(line))
        self.meta = next((r for r in self.records if r.get("part") == "meta"), {})

    def of(self, part, **match):
        out = []
        for r in self.records:
            if r.get("part") != part:
                continue
            if all(r.get(k) == v for k, v in match.items()):
                out.append(r)
        return out

    def ok(self, part, **match):
        return [r for r in self.of(part, **match) if not r.get("error")]

    def agg(self, part, field, **match):
        return Agg(r.get(field) for r in self.ok(part, **match))

    def cpu_per_gb(self, part, **match):
        vals = []
        for r in self.ok(part, **match):
            cpu = r.get("cpu")
            if part == "raw":
                cpu = (r.get("cpu_tx") or 0) + (r.get("cpu_rx") or 0)
                moved = (r.get("bytes") or 0) * r["mtu"] / r["frame"]
            else:
                moved = r.get("bytes") or 0
            if num(cpu) and moved > 0:
                vals.append(cpu / (moved / 1e9))
        return Agg(vals)

    def sizes(self, part="goodput"):
        return sorted({r["size"] for r in self.of(part) if "size" in r})

    def values(self, part, key):
        return sorted({r[key] for r in self.of(part) if key in r})

    def status(self, name):
        for r in self.records:
            if r.get("part") == "status" and r.get("name") == name:
                return r
        return None


# ------------------------------------------------------------------------------------------
# Ratios: one function so that the current run and a baseline are computed alike.


def ratio_rows(res):
    rows = []
    sizes = res.sizes()
    big = sizes[-1] if sizes else None
    for mtu in res.values("goodput", "mtu"):
        raw = res.agg("raw", "payload_gbps", mtu=mtu).median
        for qps in res.values("goodput", "qps"):
            g = res.agg("goodput", "gbps", op="write", size=big, qps=qps, mtu=mtu).median
            rows.append((f"burst WRITE {size_name(big)} {qps} QP / raw AF_XDP, MTU {mtu}",
                         ratio(g, raw), TARGET_FRACTION))
    for mtu in res.values("goodput", "mtu"):
        for op in ("write", "read", "send"):
            g1 = res.agg("goodput", "gbps", op=op, size=big, qps=1, mtu=mtu).median
            g8 = res.agg("goodput", "gbps", op=op, size=big, qps=8, mtu=mtu).median
            if g1 is not None or g8 is not None:
                rows.append((f"single QP / 8 QPs, {op.upper()} {size_name(big)}, MTU {mtu}",
                             ratio(g1, g8), TARGET_FRACTION))
    for mtu, link in ((1024, 1500), (4096, 9000)):
        best = None
        for qps in (1, 8):
            g = res.agg("goodput", "gbps", op="write", size=big, qps=qps, mtu=mtu).median
            if g is not None and (best is None or g > best):
                best = g
        for xdp, label in ((1, "with XDP"), (0, "without XDP")):
            t = res.agg("tcp", "gbps", link_mtu=link, xdp=xdp).median
            if best is not None or t is not None:
                rows.append((f"burst WRITE {size_name(big)} (best QP count), MTU {mtu} / TCP on the "
                             f"{link}-byte link {label}", ratio(best, t), None))
    for mtu in res.values("goodput", "mtu"):
        b = res.cpu_per_gb("goodput", op="write", size=big, qps=1, mtu=mtu).median
        r = res.cpu_per_gb("raw", mtu=mtu).median
        rows.append((f"CPU s/GB: burst WRITE {size_name(big)} 1 QP / raw AF_XDP, MTU {mtu}",
                     ratio(b, r), None))
        link = 9000 if mtu == 4096 else 1500
        t = res.cpu_per_gb("tcp", link_mtu=link, xdp=1).median
        rows.append((f"CPU s/GB: burst WRITE {size_name(big)} 1 QP, MTU {mtu} / TCP with XDP "
                     f"({link})", ratio(b, t), None))
    bw = res.agg("latency", "p50_us", impl="burst", op="write").median
    bw99 = res.agg("latency", "p99_us", impl="burst", op="write").median
    for mode in ("busy", "blocking"):
        u = res.agg("latency", "p50_us", impl="udp", op=mode).median
        u99 = res.agg("latency", "p99_us", impl="udp", op=mode).median
        rows.append((f"8-byte RTT median: burst WRITE / kernel UDP ping-pong ({mode})",
                     ratio(bw, u), 1.0 if mode == "busy" else None))
        rows.append((f"8-byte RTT p99: burst WRITE / kernel UDP ping-pong ({mode})",
                     ratio(bw99, u99), None))
    graw = res.agg("guest", "payload_gbps", impl="raw").median
    for size in sorted({r["size"] for r in res.of("guest") if r.get("impl") in ("burst", "rxe")}):
        gb = res.agg("guest", "gbps", impl="burst", size=size).median
        gr = res.agg("guest", "gbps", impl="rxe", size=size).median
        rows.append((f"guests: burst / rxe, WRITE {size_name(size)}, RoCE MTU 2048",
                     ratio(gb, gr), None))
        rows.append((f"guests: burst WRITE {size_name(size)} / the guests' raw AF_XDP ceiling",
                     ratio(gb, graw), TARGET_FRACTION))
        rows.append((f"guests: rxe WRITE {size_name(size)} / the guests' raw AF_XDP ceiling",
                     ratio(gr, graw), None))
    lb = res.agg("guest_lat", "p50_us", impl="burst").median
    lr = res.agg("guest_lat", "p50_us", impl="rxe").median
    if lb is not None or lr is not None:
        rows.append(("guests: 8-byte WRITE latency median, burst / rxe", ratio(lb, lr), None))
    for size in sorted({r["size"] for r in res.of("provider")}):
        for qps in sorted({r["qps"] for r in res.of("provider", size=size)}):
            p = res.agg("provider", "gbps", impl="perftest_provider", size=size, qps=qps).median
            n = res.agg("provider", "gbps", impl="burst_xfer", size=size, qps=qps).median
            rows.append((f"ib_write_bw via provider + burstd / burst-xfer native, {size_name(size)}, "
                         f"{qps} QP", ratio(p, n), None))
    return rows


# ------------------------------------------------------------------------------------------
# Figures.


def plot_goodput(res, mtu, path):
    sizes = res.sizes()
    if not sizes:
        return False
    fig, ax = plt.subplots(figsize=(10, 4.6))
    styles = {"write": "o", "read": "s", "send": "^"}
    for op in ("write", "read", "send"):
        for qps in res.values("goodput", "qps"):
            xs, ys, lo, hi = [], [], [], []
            for s in sizes:
                a = res.agg("goodput", "gbps", op=op, size=s, qps=qps, mtu=mtu)
                if a.median is None:
                    continue
                xs.append(s)
                ys.append(a.median)
                lo.append(a.median - a.min)
                hi.append(a.max - a.median)
            if xs:
                ax.errorbar(xs, ys, yerr=[lo, hi], fmt=styles[op], capsize=3,
                            alpha=1.0 if qps == 1 else 0.55,
                            linestyle="-" if qps == 1 else "--",
                            label=f"burst {op.upper()}, {qps} QP")
    raw = res.agg("raw", "payload_gbps", mtu=mtu)
    if raw.median is not None:
        ax.axhline(raw.median, color="black", linewidth=1.2,
                   label=f"raw AF_XDP payload ceiling ({raw.median:.1f})")
    link = 9000 if mtu == 4096 else 1500
    for xdp, color, label in ((1, "tab:red", "with XDP"), (0, "tab:gray", "without XDP")):
        t = res.agg("tcp", "gbps", link_mtu=link, xdp=xdp)
        if t.median is not None:
            ax.axhline(t.median, color=color, linestyle=":", linewidth=1.2,
                       label=f"kernel TCP {label} ({t.median:.1f})")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_name(s) for s in sizes])
    ax.set_xlabel("message size")
    ax.set_ylabel("goodput, Gbit/s")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Goodput vs message size, RoCE MTU {mtu} ({link}-byte veth), medians, min–max")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def median_run(records, key="p50_us"):
    ok = [r for r in records if not r.get("error") and num(r.get(key)) and r.get("quantiles_us")]
    if not ok:
        return None
    ok.sort(key=lambda r: r[key])
    return ok[(len(ok) - 1) // 2]


def plot_cdf(series, path, title):
    drawn = False
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for label, rec in series:
        if rec is None:
            continue
        q = rec["quantiles_us"][:101]
        ax.plot(q, [i / 100 for i in range(len(q))], label=label)
        drawn = True
    if not drawn:
        plt.close(fig)
        return False
    ax.set_xscale("log")
    ax.set_xlabel("round trip, µs (log)")
    ax.set_ylabel("fraction of messages")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_cpu(rows, path):
    rows = [(label, a) for label, a in rows if a.median is not None]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.2))
    ys = range(len(rows))
    ax.barh(list(ys), [a.median for _, a in rows],
            xerr=[[a.median - a.min for _, a in rows], [a.max - a.median for _, a in rows]],
            color="tab:blue", alpha=0.75, capsize=3)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([label for label, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("CPU seconds per GB moved (both sides, user + system)")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ------------------------------------------------------------------------------------------
# Markdown.


def table(header, rows, align=None):
    out = ["| " + " | ".join(header) + " |"]
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    out.append("| " + " | ".join(align) + " |")
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def skipped_note(res, part):
    st = res.status(part)
    if st is None:
        return f"*Not run (part `{part}` was not selected).*"
    if st.get("status") == "ok":
        return None
    return (f"*Part `{part}` {st.get('status')}: {st.get('reason') or 'see its log'} "
            f"(log: `{st.get('log', '?')}`).*")


def verdict(value, target, higher_is_better=True):
    if value is None:
        return "not measured"
    ok = value >= target if higher_is_better else value <= target
    return "met" if ok else "**not met**"


def write_report(res, base, md_path, png_dir, base_name=None):
    m = res.meta
    os.makedirs(png_dir, exist_ok=True)
    rel = os.path.relpath(png_dir, os.path.dirname(os.path.abspath(md_path)))
    L = []
    L.append("# Benchmarks")
    L.append("")
    L.append(f"Generated by `bench/run.sh{' --quick' if m.get('quick') else ''}` on "
             f"{m.get('date', '?')} from `{m.get('results_file', 'docs/benchmarks/results.jsonl')}` "
             "(one JSON object per run); do not edit by hand: rerun the suite, or "
             "`bench/report.py` on the results file.")
    L.append("")
    if m.get("quick"):
        L.append("> **Quick run** (`--quick`): one short run per point, to check that the suite "
                 "works. Do not quote these numbers; the full run is `sudo bench/run.sh`.")
        L.append("")
    L.append("## Reproduce")
    L.append("")
    L.append("```")
    L.append("sudo bench/run.sh            # full run (builds build/default if needed), ~20 min")
    L.append("sudo bench/run.sh --quick    # one short run per point, a few minutes")
    L.append("bench/report.py --results docs/benchmarks/results.jsonl --md docs/benchmarks.md "
             "--png-dir docs/benchmarks   # report only")
    L.append("```")
    L.append("")
    L.append(f"This run: `{m.get('command', 'bench/run.sh')}` — {m.get('runs', '?')} run(s) per point, "
             f"{m.get('seconds', '?')} s per run (guests: at least {3 if m.get('quick') else 5} s), total "
             f"{m.get('total_seconds', '?')} s. Values are medians over the runs with (min–max); "
             "every ratio is a ratio of medians measured side by side in this run. Runs of the "
             "goodput matrix are interleaved (run 1 of every point, then run 2, ...).")
    L.append("")
    L.append("## Machine")
    L.append("")
    L.append(table(["", ""], [
        ("CPU", f"{m.get('cpu', '?')}, {m.get('nproc', '?')} vCPUs"),
        ("memory", m.get("mem", "?")),
        ("kernel", m.get("kernel", "?")),
        ("userland", m.get("os", "?")),
        ("compiler / build", m.get("compiler", "?")),
        ("burst commit", m.get("commit", "?")),
        ("tools", m.get("tools", "?")),
        ("placement", m.get("placement", "?")),
        ("load at start", m.get("loadavg", "?")),
    ], ["---", "---"]))
    L.append("")
    L.append("The machine is shared (other builds and VMs run at the same time): wall-clock "
             "figures move by 5–30 % between runs; the spread columns show by how much in this run. "
             "Instruction counts (callgrind) do not move.")
    L.append("")

    # --- Targets -------------------------------------------------------------------------
    sizes = res.sizes()
    big = sizes[-1] if sizes else None
    L.append("## Targets (reported, never asserted)")
    L.append("")
    trows = []
    for mtu in res.values("goodput", "mtu"):
        raw = res.agg("raw", "payload_gbps", mtu=mtu).median
        g = res.agg("goodput", "gbps", op="write", size=big, qps=1, mtu=mtu).median
        r = ratio(g, raw)
        trows.append((f"goodput ≥ 0.9 × raw AF_XDP (WRITE {size_name(big)}, 1 QP, MTU {mtu})",
                      f"{fmt_ratio(g)} / {fmt_ratio(raw)} Gbit/s", fmt_ratio(r),
                      verdict(r, TARGET_FRACTION)))
    for mtu in res.values("goodput", "mtu"):
        g1 = res.agg("goodput", "gbps", op="write", size=big, qps=1, mtu=mtu).median
        g8 = res.agg("goodput", "gbps", op="write", size=big, qps=8, mtu=mtu).median
        r = ratio(g1, g8)
        trows.append((f"single QP ≥ 0.9 × 8 QPs (WRITE {size_name(big)}, MTU {mtu})",
                      f"{fmt_ratio(g1)} / {fmt_ratio(g8)} Gbit/s", fmt_ratio(r),
                      verdict(r, TARGET_FRACTION)))
    for mtu in (1024, 4096):
        # ICRC off: the ICRC is excluded entirely (with verification on, core/pkt also carries
        # the ~20 instructions of the call around ISA-L that ipp.sh cannot separate).
        core = res.agg("ipp", "core", path="rx", mtu=mtu, icrc=0).median
        core_on = res.agg("ipp", "core", path="rx", mtu=mtu, icrc=1).median
        trows.append((f"≤ {TARGET_IPP} instructions per received WRITE_MIDDLE, excl. copy and ICRC "
                      f"(MTU {mtu})",
                      "—" if core is None else f"{core:.0f} ({core_on:.0f} with ICRC checked)"
                      if core_on is not None else f"{core:.0f}",
                      "—" if core is None else f"{core / TARGET_IPP:.2f}",
                      verdict(core, TARGET_IPP, higher_is_better=False)))
    bw = res.agg("latency", "p50_us", impl="burst", op="write").median
    ub = res.agg("latency", "p50_us", impl="udp", op="busy").median
    r = ratio(bw, ub)
    trows.append(("8-byte RTT ≤ kernel UDP ping-pong (medians; UDP busy-polling like burst)",
                  f"{fmt_ratio(bw, 1)} / {fmt_ratio(ub, 1)} µs", fmt_ratio(r),
                  verdict(r, 1.0, higher_is_better=False)))
    graw = res.agg("guest", "payload_gbps", impl="raw").median
    gsizes = sorted({x["size"] for x in res.of("guest") if x.get("impl") == "burst"})
    for size in gsizes:
        gb = res.agg("guest", "gbps", impl="burst", size=size).median
        r = ratio(gb, graw)
        trows.append((f"identical emulated guests: burst ≥ 0.9 × the guests' raw AF_XDP ceiling "
                      f"(WRITE {size_name(size)})", f"{fmt_ratio(gb, 3)} / {fmt_ratio(graw, 3)} Gbit/s",
                      fmt_ratio(r), verdict(r, TARGET_FRACTION)))
    if not gsizes:
        trows.append(("identical emulated guests: burst ≥ 0.9 × raw AF_XDP ceiling", "—", "—",
                      "not measured"))
    L.append(table(["target", "measured", "ratio", ""], trows, ["---", "---:", "---:", "---"]))
    L.append("")

    # --- Ratios --------------------------------------------------------------------------
    L.append("## Ratios, side by side")
    L.append("")
    cur = ratio_rows(res)
    if base is not None:
        b = {name: v for name, v, _ in ratio_rows(base)}
        L.append(f"Baseline column: `{base_name}` "
                 f"({base.meta.get('date', '?')}, commit {base.meta.get('commit', '?')}).")
        L.append("")
        L.append(table(["ratio", "baseline (before)", "this run (after)", "target"],
                       [(n, fmt_ratio(b.get(n)), fmt_ratio(v), "—" if t is None else f"{t:g}")
                        for n, v, t in cur], ["---", "---:", "---:", "---:"]))
    else:
        L.append("No optimisation was made with this report: these are the \"before\" values. "
                 "After a change, rerun with `--baseline OLD_RESULTS.jsonl` (e.g. a saved copy of "
                 "docs/benchmarks/results.jsonl) for a before/after column.")
        L.append("")
        L.append(table(["ratio", "this run", "target"],
                       [(n, fmt_ratio(v), "—" if t is None else f"{t:g}") for n, v, t in cur],
                       ["---", "---:", "---:"]))
    L.append("")

    # --- Goodput -------------------------------------------------------------------------
    L.append("## Goodput: burst-xfer over AF_XDP on a veth pair")
    L.append("")
    note = skipped_note(res, "host")
    if note:
        L.append(note)
        L.append("")
    L.append("One burst-xfer per namespace (side A client on CPU 0, side B server on CPU 1), one "
             "worker each (`--spin`: no yielding), RC QPs, messages in flight per QP: 8 MB / "
             "size, between 1 and 64. Goodput is the client's completed message bytes per "
             "second. Raw AF_XDP is xsk-raw's delivered rate (the lower of sender and receiver) "
             "scaled to payload (frame = payload + 58 bytes of Ethernet/IPv4/UDP/BTH/ICRC), "
             "same cores, same queue count.")
    L.append("")
    for mtu in res.values("goodput", "mtu"):
        png = f"goodput_mtu{mtu}.png"
        if plot_goodput(res, mtu, os.path.join(png_dir, png)):
            L.append(f"![goodput MTU {mtu}]({rel}/{png})")
            L.append("")
        raw = res.agg("raw", "payload_gbps", mtu=mtu).median
        rows = []
        for op in ("write", "read", "send"):
            for s in sizes:
                a1 = res.agg("goodput", "gbps", op=op, size=s, qps=1, mtu=mtu)
                a8 = res.agg("goodput", "gbps", op=op, size=s, qps=8, mtu=mtu)
                if a1.median is None and a8.median is None:
                    continue
                c1 = res.cpu_per_gb("goodput", op=op, size=s, qps=1, mtu=mtu)
                fails = len(res.of("goodput", op=op, size=s, mtu=mtu)) - len(
                    res.ok("goodput", op=op, size=s, mtu=mtu))
                rows.append((op.upper(), size_name(s), a1.fmt(), a8.fmt(),
                             fmt_ratio(ratio(a1.median, a8.median)),
                             fmt_ratio(ratio(a1.median, raw)), fmt_ratio(ratio(a8.median, raw)),
                             c1.fmt(2, False), fails or ""))
        L.append(f"RoCE MTU {mtu} ({9000 if mtu == 4096 else 1500}-byte link), Gbit/s:")
        L.append("")
        L.append(table(["op", "size", "1 QP", "8 QPs", "1 QP / 8 QPs", "1 QP / raw", "8 QPs / raw",
                        "CPU s/GB (1 QP)", "failed runs"], rows,
                       ["---", "---"] + ["---:"] * 7))
        L.append("")

    # --- Raw and TCP ---------------------------------------------------------------------
    L.append("## Baselines on the same veth pair")
    L.append("")
    rows = []
    for mtu in res.values("raw", "mtu"):
        recs = res.ok("raw", mtu=mtu)
        frame = recs[0]["frame"] if recs else "?"
        rows.append((mtu, frame, res.agg("raw", "tx_gbps", mtu=mtu).fmt(),
                     res.agg("raw", "payload_gbps", mtu=mtu).fmt(),
                     res.agg("raw", "rx_gbps", mtu=mtu).fmt(),
                     Agg(x / 1e6 for x in (r.get("tx_pps") for r in recs) if num(x)).fmt(3),
                     res.cpu_per_gb("raw", mtu=mtu).fmt(2, False)))
    L.append("Raw AF_XDP (tools/xsk-raw, one sender thread on queue 0 of side A, one receiver "
             "thread on queue 0 of side B; the receiver sleeps 200 µs after 1000 empty polls, so "
             "its idle time before and after the sender's run costs little CPU):")
    L.append("")
    L.append(table(["RoCE MTU", "frame B", "sent Gbit/s (L2)", "payload Gbit/s", "received Gbit/s",
                    "sent Mpps", "CPU s/GB"], rows))
    L.append("")
    rows = []
    for link in res.values("tcp", "link_mtu"):
        for xdp in (0, 1):
            a = res.agg("tcp", "gbps", link_mtu=link, xdp=xdp)
            if a.n == 0:
                continue
            rows.append((link, "attached (both ends)" if xdp else "none", a.fmt(),
                         res.cpu_per_gb("tcp", link_mtu=link, xdp=xdp).fmt(2, False)))
    L.append("Kernel TCP (iperf3, one stream A → B). \"XDP attached\": burst's roce_steer program on "
             "both veth ends (held by idle burst-xfer servers: AF_XDP sockets bound, no thread "
             "polling); TCP passes through it (XDP_PASS):")
    L.append("")
    L.append(table(["link MTU", "XDP program", "Gbit/s", "CPU s/GB"], rows,
                   ["---:", "---", "---:", "---:"]))
    L.append("")

    # --- Latency -------------------------------------------------------------------------
    L.append("## Latency, 8 bytes")
    L.append("")
    rows = []
    series = []
    for impl, op, label in (("burst", "write", "burst RDMA WRITE (post → completion)"),
                            ("burst", "send", "burst SEND (post → completion)"),
                            ("udp", "busy", "kernel UDP ping-pong, busy-polling"),
                            ("udp", "blocking", "kernel UDP ping-pong, blocking recv")):
        recs = res.of("latency", impl=impl, op=op)
        if not recs:
            continue
        rows.append((label, res.agg("latency", "p50_us", impl=impl, op=op).fmt(1),
                     res.agg("latency", "p99_us", impl=impl, op=op).fmt(1),
                     Agg(r["quantiles_us"][102] for r in res.ok("latency", impl=impl, op=op)
                         if len(r.get("quantiles_us") or []) > 102).fmt(1),
                     Agg(r.get("msgs") for r in res.ok("latency", impl=impl, op=op)).fmt(0)))
        series.append((label, median_run(res.ok("latency", impl=impl, op=op))))
    if plot_cdf(series, os.path.join(png_dir, "latency_cdf.png"),
                "8-byte round trip on the veth pair (run with the median p50)"):
        L.append(f"![latency CDF]({rel}/latency_cdf.png)")
        L.append("")
    L.append("One message in flight, RoCE MTU 1024 on the 1500-byte link, the same namespaces and "
             "CPUs as above. burst-xfer: time from posting the WR to its completion (the WRITE's "
             "ACK, or the SEND's); its per-message samples come from `--lat-out`. udp-pingpong "
             "(tools/udp-pingpong): time from send() to the echo's arrival.")
    L.append("")
    L.append(table(["", "median µs", "p99 µs", "p99.9 µs", "messages per run"], rows))
    L.append("")

    # --- CPU -----------------------------------------------------------------------------
    L.append("## CPU seconds per GB moved")
    L.append("")
    cpu_rows = []
    for mtu in res.values("goodput", "mtu"):
        for op in ("write", "read", "send"):
            cpu_rows.append((f"burst {op.upper()} {size_name(big)} 1 QP, MTU {mtu}",
                             res.cpu_per_gb("goodput", op=op, size=big, qps=1, mtu=mtu)))
        cpu_rows.append((f"raw AF_XDP, MTU {mtu}", res.cpu_per_gb("raw", mtu=mtu)))
    for link in res.values("tcp", "link_mtu"):
        for xdp in (0, 1):
            cpu_rows.append((f"kernel TCP, link {link}, XDP {'on' if xdp else 'off'}",
                             res.cpu_per_gb("tcp", link_mtu=link, xdp=xdp)))
    if plot_cpu(cpu_rows, os.path.join(png_dir, "cpu_per_gb.png")):
        L.append(f"![CPU per GB]({rel}/cpu_per_gb.png)")
        L.append("")
    L.append("User + system CPU time of both sides' processes (wait4 rusage through /usr/bin/time, "
             "whole process trees) divided by the application bytes moved. Caveats: burst-xfer and "
             "xsk-raw poll without sleeping, so a side that waits still burns its core (the figure "
             "is close to 2 cores × run time / bytes); kernel work done in ksoftirqd threads "
             "instead of the processes' own context is not counted (on veth most of it runs in "
             "the sender's system call).")
    L.append("")
    L.append(table(["", "CPU s/GB median (min–max)"], [(n, a.fmt()) for n, a in cpu_rows]))
    L.append("")

    # --- IPP -----------------------------------------------------------------------------
    L.append("## Instructions per packet (bench/ipp.sh, callgrind)")
    L.append("")
    note = skipped_note(res, "ipp")
    if note:
        L.append(note)
        L.append("")
    rows = []
    for r in res.of("ipp"):
        rows.append((r["path"], r["mtu"], "on" if r["icrc"] else "off", r["total"], r["memcpy"],
                     r["icrc_instr"], f"**{r['core']}**" if r["path"] == "rx" else r["core"]))
    L.append("The transport's own instructions per WRITE_MIDDLE packet inside `Engine::rx_burst` / "
             "`tx_build` (two engines over loopback, 20 000 packets), with the payload copy and the "
             "ICRC (ISA-L) counted separately and subtracted. Repeatable to the instruction.")
    L.append("")
    L.append(table(["path", "MTU", "ICRC", "total/pkt", "memcpy/pkt", "ICRC/pkt", "core/pkt"], rows,
                   ["---", "---:", "---", "---:", "---:", "---:", "---:"]))
    L.append("")

    # --- Provider ------------------------------------------------------------------------
    L.append("## Through the verbs provider: perftest vs burst-xfer (bench/provider_vs_xfer.sh)")
    L.append("")
    note = skipped_note(res, "provider")
    if note:
        L.append(note)
        L.append("")
    rows = []
    for size in sorted({r["size"] for r in res.of("provider")}):
        for qps in sorted({r["qps"] for r in res.of("provider", size=size)}):
            p = res.agg("provider", "gbps", impl="perftest_provider", size=size, qps=qps)
            n = res.agg("provider", "gbps", impl="burst_xfer", size=size, qps=qps)
            rows.append((size_name(size), qps, p.fmt(), n.fmt(), fmt_ratio(ratio(p.median, n.median))))
    L.append("Stock `ib_write_bw` through libburst-rdmav34 and one burstd per namespace (one "
             "worker), against burst-xfer driving the transport natively (one worker), RDMA "
             "WRITE, RoCE MTU 1024 on a 1500-byte veth, Gbit/s. That script runs all perftest "
             "points first, then all burst-xfer points, without CPU pinning.")
    L.append("")
    L.append(table(["message", "QPs", "ib_write_bw via provider", "burst-xfer native",
                    "provider / native"], rows))
    L.append("")

    # --- Guests --------------------------------------------------------------------------
    L.append("## Linux rxe vs burst in identical emulated guests")
    L.append("")
    note = skipped_note(res, "guest")
    if note:
        L.append(note)
        L.append("")
    gi = next(iter(res.of("guest_info")), None)
    if gi:
        L.append(f"Two QEMU guests ({gi.get('accel')}, {gi.get('smp')} vCPU, {gi.get('mem_mb')} MB, "
                 f"Debian kernel {gi.get('kernel')}; boot {gi.get('boot_s_g1')} s / "
                 f"{gi.get('boot_s_g2')} s) on a bridge in a private namespace (tests/interop/lib/"
                 f"guest.sh), virtio_net at netdev MTU {gi.get('netdev_mtu')}, RoCE MTU "
                 f"{gi.get('roce_mtu')} for everyone. burst runs inside the guests on their own "
                 "AF_XDP (native XDP, copy mode: the 6.1 kernel has no AF_XDP multi-buffer, so one "
                 "frame must fit a 4 KB chunk: netdev MTU ≤ 3822). Raw ceiling: xsk-raw "
                 f"{gi.get('frame')}-byte frames (a WRITE_MIDDLE at MTU {gi.get('roce_mtu')}) g1 → g2, "
                 "payload rate at the receiver. rxe: perftest on rdma_rxe. Server in g2, client in "
                 "g1. Emulation (TCG) makes everything slow: compare only within this table.")
        L.append("")
        rows = [("raw AF_XDP ceiling (payload at the receiver)", f"{gi.get('frame')} B frames",
                 res.agg("guest", "payload_gbps", impl="raw").fmt(3), "1.00")]
        for size in sorted({x["size"] for x in res.of("guest") if x.get("impl") in ("rxe", "burst")}):
            for impl, label in (("rxe", "rxe ib_write_bw"), ("burst", "burst-xfer WRITE, 1 QP")):
                a = res.agg("guest", "gbps", impl=impl, size=size)
                rows.append((label, size_name(size), a.fmt(3), fmt_ratio(ratio(a.median, graw))))
        L.append(table(["", "message", "Gbit/s", "/ raw ceiling"], rows,
                       ["---", "---", "---:", "---:"]))
        L.append("")
        rows = []
        for impl, label in (("rxe", "rxe ib_write_lat (t_typical, 99%)"),
                            ("burst", "burst-xfer WRITE, depth 1 (p50, p99)")):
            if res.of("guest_lat", impl=impl):
                rows.append((label, res.agg("guest_lat", "p50_us", impl=impl).fmt(1),
                             res.agg("guest_lat", "p99_us", impl=impl).fmt(1)))
        if rows:
            L.append(table(["8-byte WRITE latency in the guests", "median µs", "p99 µs"], rows))
            L.append("")

    # --- Notes ---------------------------------------------------------------------------
    L.append("## Reading these numbers")
    L.append("")
    L.append("- Raw AF_XDP ceiling: what arrives, i.e. the lower of the sender's and the "
             "receiver's rate (the sending socket can outrun the receiving one, which then "
             "counts drops; both rates are in the raw table); in the guests, the receiver's "
             "rate.")
    L.append("- Under emulation both rxe and burst depend on how the host schedules the guests' "
             "vCPU threads next to QEMU's I/O threads and everything else on the machine: medians "
             "of single runs move between ~0.3 ms and several ms for either stack. Compare "
             "medians of several runs, and only within the guest table.")
    L.append("- burst-xfer (with --spin on the veth pair: each side owns its core and never "
             "yields, like the busy-polling UDP baseline) and xsk-raw busy-poll, kernel TCP and "
             "blocking UDP sleep: CPU per GB favours the sleepers when the link is not the "
             "bottleneck.")
    L.append("- A point with failed runs (see the goodput tables) is summarised over its "
             "successful runs only; the logs of the last run are in build/default/bench-run/.")
    L.append("")

    # --- Commands, status ----------------------------------------------------------------
    L.append("## Exact commands")
    L.append("")
    L.append("As run (first run of each kind; namespaces are named after the script's PID; other "
             "runs differ only in --op/--size/--qps/--depth/--mtu and MTU of the link):")
    L.append("")
    L.append("```")
    for r in res.of("cmd"):
        L.append(f"# {r['name']}")
        L.append(r["cmd"])
    L.append("```")
    L.append("")
    L.append("## Parts of this run")
    L.append("")
    rows = [(r.get("name"), r.get("status"), r.get("seconds"), r.get("reason") or "")
            for r in res.of("status")]
    L.append(table(["part", "status", "seconds", "note"], rows, ["---", "---", "---:", "---"]))
    L.append("")
    with open(md_path, "w") as f:
        f.write("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--md", required=True)
    ap.add_argument("--png-dir", required=True)
    ap.add_argument("--baseline", help="an earlier results file: the \"before\" column")
    ap.add_argument("--baseline-name", help="how to name the baseline (default: its path)")
    a = ap.parse_args()
    res = Results(a.results)
    base = Results(a.baseline) if a.baseline else None
    write_report(res, base, a.md, a.png_dir, a.baseline_name or a.baseline)
    print(f"report: {a.md}, figures in {a.png_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
