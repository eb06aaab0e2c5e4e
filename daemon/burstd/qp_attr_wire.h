/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Wire (abi/burst_ctl_proto.h) <-> core (core/verbs.h) QP capabilities and
// addresses: one table of corresponding fields per struct, read in both
// directions. The attribute conversion with its value checks is
// Resources::attr_from_wire / attr_to_wire (qp_attr_wire.cc).
#pragma once

#include <array>
#include <cstdint>

#include "abi/burst_ctl_proto.h"
#include "core/verbs.h"

namespace burst::burstd {

burst_ctl_qp_cap cap_to_wire(const core::QpCap& c);
core::QpCap cap_from_wire(const burst_ctl_qp_cap& w);
// All zero: the MAC is to be resolved (Resources::resolve_dmac).
bool zero_mac(const std::array<uint8_t, 6>& m);

}  // namespace burst::burstd
