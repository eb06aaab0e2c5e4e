# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The results of bench/run.sh as bench/report.py reads them: one JSON object per line (Results),
medians and spreads over runs (Agg), and the ratios of the report (ratio_rows), computed alike for
the current run and a baseline."""
import json
import statistics

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


def median_run(records, key="p50_us"):
    ok = [r for r in records if not r.get("error") and num(r.get(key)) and r.get("quantiles_us")]
    if not ok:
        return None
    ok.sort(key=lambda r: r[key])
    return ok[(len(ok) - 1) // 2]
