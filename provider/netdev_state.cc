// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The port's live state comes from its netdev, read in the application's
// network namespace with the classic interface ioctls (no netlink, no sysfs:
// /sys may belong to another namespace).
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "provider/provider.h"

namespace burst::provider {

NetdevState query_netdev_state(const char* ifname) {
  NetdevState st;
  if (ifname == nullptr || ifname[0] == '\0' || strlen(ifname) >= IFNAMSIZ) return st;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return st;

  ifreq ifr{};
  memcpy(ifr.ifr_name, ifname, strlen(ifname));
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
    st.exists = true;
    st.up = (ifr.ifr_flags & IFF_UP) != 0;
    st.running = (ifr.ifr_flags & IFF_RUNNING) != 0;
    if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0) {
      st.mtu = static_cast<uint32_t>(ifr.ifr_mtu);
    }
    ethtool_cmd ecmd{};
    ecmd.cmd = ETHTOOL_GSET;
    ifr.ifr_data = reinterpret_cast<char*>(&ecmd);
    if (ioctl(fd, SIOCETHTOOL, &ifr) == 0) {
      const uint32_t speed = ethtool_cmd_speed(&ecmd);
      if (speed != static_cast<uint32_t>(SPEED_UNKNOWN)) st.speed_mbps = speed;
    }
  }
  close(fd);
  return st;
}

}  // namespace burst::provider
