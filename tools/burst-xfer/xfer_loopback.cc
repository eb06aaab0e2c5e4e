// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// burst-xfer --backend loopback: requester and responder engines in this
// process, joined by the loopback datapath, driven from one thread.
#include <cstdio>
#include <memory>
#include <vector>

#include "tools/burst-xfer/xfer.h"
#include "tools/common/engine_pair.h"

namespace burst::tools {

int run_loopback(const Options& o) {
  Params p;
  if (!parse_op(o.op, &p.op)) return 2;
  p.size = static_cast<uint32_t>(o.size);
  p.depth = o.depth;
  p.verify = o.verify;

  PairOptions po;
  po.mtu = path_mtu_of(o.mtu);
  po.l2_mtu = o.mtu == 4096 ? 9014 : o.mtu == 2048 ? 3514 : 1514;
  po.real_clock = true;
  po.window_pkts = o.window;
  po.timeout = 14;
  po.cap.max_send_wr = 2 * o.depth + 4;
  po.cap.max_recv_wr = 2 * o.depth + 4;
  po.cq_depth = std::max<uint32_t>(4096, 8 * o.qps * (o.depth + 4));
  EnginePair pair(po);
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  if (o.loss > 0) {
    datapath::LoopbackFaults f;
    f.drop = o.loss;
    pair.set_faults(0, f);
    f.seed = 2;
    pair.set_faults(1, f);
  }
#endif

  const uint64_t slot = std::max<uint64_t>(o.size, 1);
  const uint64_t req_region = slot * o.depth;
  const uint64_t resp_region = slot * o.depth * 2;
  std::vector<uint8_t> local(req_region * o.qps), check(req_region * o.qps),
      remote(resp_region * o.qps);
  uint32_t l_lkey, l_rkey, c_lkey, c_rkey, r_lkey, r_rkey;
  pair.reg(0, local.data(), local.size(), 0, &l_lkey, &l_rkey);
  pair.reg(0, check.data(), check.size(), 0, &c_lkey, &c_rkey);
  pair.reg(1, remote.data(), remote.size(), core::kAccessRemoteWrite | core::kAccessRemoteRead,
           &r_lkey, &r_rkey);

  std::vector<std::unique_ptr<QpRequester>> reqs;
  std::vector<std::unique_ptr<QpResponder>> resps;
  std::vector<uint32_t> req_of_qpn, resp_of_qpn;  // QPN -> index (small tables)
  for (uint32_t q = 0; q < o.qps; ++q) {
    const size_t id = pair.connect_rc();
    const uint32_t qa = pair.qpn(id, 0), qb = pair.qpn(id, 1);
    RemoteRegion rr{reinterpret_cast<uint64_t>(remote.data() + q * resp_region), r_rkey};
    reqs.push_back(std::make_unique<QpRequester>(pair.engine(0), qa, q, p,
                                                 local.data() + q * req_region, l_lkey,
                                                 check.data() + q * req_region, c_lkey, rr));
    resps.push_back(std::make_unique<QpResponder>(pair.engine(1), qb, q, p,
                                                  remote.data() + q * resp_region, r_lkey));
    core::Status st = resps.back()->start();
    if (!st.ok()) {
      std::fprintf(stderr, "burst-xfer: responder setup failed (errno %d)\n", st.to_errno());
      return 1;
    }
    if (req_of_qpn.size() <= qa) req_of_qpn.resize(qa + 1, UINT32_MAX);
    if (resp_of_qpn.size() <= qb) resp_of_qpn.resize(qb + 1, UINT32_MAX);
    req_of_qpn[qa] = q;
    resp_of_qpn[qb] = q;
  }

  Results req_res, resp_res;
  req_res.latency_ns.reserve(1 << 20);
  const uint64_t start = now_ns();
  const uint64_t iters = o.iters ? o.iters : UINT64_MAX;
  const uint64_t deadline =
      o.duration_s > 0 ? start + static_cast<uint64_t>(o.duration_s * 1e9) : UINT64_MAX;
  // Hard bound: duration + 60 s, or 10 minutes with --iters.
  const uint64_t hard_stop =
      (o.duration_s > 0 ? deadline : start + 540'000'000'000ull) + 60'000'000'000ull;
  uint64_t posted = 0;
  bool timed_out = false;
  core::Wc wc[64];
  while (req_res.error.empty() && resp_res.error.empty() && !interrupted()) {
    const uint64_t t = now_ns();
    if (t >= hard_stop) {
      timed_out = true;
      break;
    }
    const bool posting = t < deadline && posted < iters;
    if (posting)
      for (auto& r : reqs) posted += r->post(t, iters - posted, &req_res);
    pair.step();
    int n;
    while ((n = pair.engine(1).poll_cq(pair.host(1).cq, wc, 64)) > 0)
      for (int i = 0; i < n; ++i) {
        const uint32_t q =
            wc[i].qp_num < resp_of_qpn.size() ? resp_of_qpn[wc[i].qp_num] : UINT32_MAX;
        if (q == UINT32_MAX)
          resp_res.error = "completion for an unknown QP";
        else
          resps[q]->complete(wc[i], &resp_res);
      }
    const uint64_t t1 = now_ns();
    while ((n = pair.engine(0).poll_cq(pair.host(0).cq, wc, 64)) > 0)
      for (int i = 0; i < n; ++i) {
        const uint32_t q = wc[i].qp_num < req_of_qpn.size() ? req_of_qpn[wc[i].qp_num] : UINT32_MAX;
        if (q == UINT32_MAX)
          req_res.error = "completion for an unknown QP";
        else
          reqs[q]->complete(wc[i], t1, &req_res);
      }
    if (!posting) {
      bool idle = true;
      for (auto& r : reqs) idle = idle && r->idle();
      if (idle) break;
    }
  }
  const double secs = static_cast<double>(now_ns() - start) / 1e9;
  const DropReport drops = drop_report({&pair.engine(0).counters(), &pair.engine(1).counters()});
  req_res.verify_failures += resp_res.verify_failures;
  if (!o.lat_out.empty() && !write_latency_samples(o.lat_out, req_res) && req_res.error.empty())
    req_res.error = "cannot write --lat-out";
  std::printf("%s\n", summary_line(o, &req_res, secs, drops, timed_out ? " TIMEOUT" : "").c_str());
  const std::string& err = !req_res.error.empty() ? req_res.error : resp_res.error;
  if (!err.empty()) {
    std::fprintf(stderr, "burst-xfer: %s\n", err.c_str());
    return 1;
  }
  if (req_res.verify_failures) {
    std::fprintf(stderr, "burst-xfer: %llu messages failed verification\n",
                 static_cast<unsigned long long>(req_res.verify_failures));
    return 1;
  }
  return timed_out ? 1 : 0;
}

}  // namespace burst::tools
