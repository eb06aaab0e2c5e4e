/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IbCm: first version, the API only (every call ENOSYS); the protocol follows.
#include "cm/ib_cm.h"

#include <cerrno>
#include <cstdint>

namespace burst::cm {

struct IbCm::Impl {
  IbCmHost& host;
  CmCounters counters;
};

IbCm::IbCm(IbCmHost& host, uint64_t, uint64_t) : impl_(new Impl{host, {}}) {}
IbCm::~IbCm() { delete impl_; }
CmHandle IbCm::create_id(uint64_t) { return kNoCmHandle; }
void IbCm::destroy_id(CmHandle) {}
int IbCm::listen(CmHandle, uint64_t, uint64_t) { return ENOSYS; }
int IbCm::send_req(CmHandle, const CmReqParams&) { return ENOSYS; }
int IbCm::send_rep(CmHandle, const CmRepParams&) { return ENOSYS; }
int IbCm::send_rtu(CmHandle, const uint8_t*, uint8_t) { return ENOSYS; }
int IbCm::send_rej(CmHandle, RejReason, const uint8_t*, uint8_t, const uint8_t*, uint8_t) { return ENOSYS; }
int IbCm::send_mra(CmHandle, uint8_t, const uint8_t*, uint8_t) { return ENOSYS; }
int IbCm::send_dreq(CmHandle, const uint8_t*, uint8_t) { return ENOSYS; }
int IbCm::send_drep(CmHandle, const uint8_t*, uint8_t) { return ENOSYS; }
int IbCm::establish(CmHandle) { return ENOSYS; }
int IbCm::send_sidr_req(CmHandle, const CmSidrReqParams&) { return ENOSYS; }
int IbCm::send_sidr_rep(CmHandle, const CmSidrRepParams&) { return ENOSYS; }
void IbCm::receive(const Mad&) { ++impl_->counters.mads_received; }
void IbCm::tick() {}
uint64_t IbCm::next_deadline() const { return UINT64_MAX; }
const CmCounters& IbCm::counters() const { return impl_->counters; }
size_t IbCm::id_count() const { return 0; }

}  // namespace burst::cm
