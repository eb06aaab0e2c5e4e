# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The PNG figures of docs/benchmarks.md (matplotlib, no display): goodput per message size,
latency CDFs, CPU per GB. Each plot_* returns False, and writes nothing, when it has no data."""
import matplotlib

from report_data import size_name

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


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
