// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Compiles every header of abi/ as strict C11 (their static assertions run
 * here too) and reports the C view of the shared-memory layout to the C++ test
 * (layout_test.cc). */
#include "abi/burst_ctl_proto.h"
#include "abi/burst_device.h"
#include "abi/burst_limits.h"
#include "abi/burst_shim.h"
#include "abi/burst_shm_abi.h"

size_t burst_shm_c_layout(int which);

size_t burst_shm_c_layout(int which) {
  switch (which) {
    case 0: return sizeof(struct burst_shm_region);
    case 1: return sizeof(struct burst_shm_ring);
    case 2: return sizeof(struct burst_shm_send_wqe);
    case 3: return sizeof(struct burst_shm_recv_wqe);
    case 4: return sizeof(struct burst_shm_cqe);
    case 5: return sizeof(struct burst_shm_doorbell);
    case 6: return offsetof(struct burst_shm_ring, consumer_index);
    case 7: return offsetof(struct burst_shm_doorbell, head);
    case 8: return offsetof(struct burst_shm_send_wqe, remote_qkey);
    default: return 0;
  }
}
