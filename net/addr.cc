// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "net/addr.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>

namespace burst::net {

Gid gid_from_ipv4(const in_addr& a) {
  Gid g{};
  g[10] = 0xff;
  g[11] = 0xff;
  std::memcpy(&g[12], &a.s_addr, 4);
  return g;
}

Gid gid_from_ipv6(const in6_addr& a) {
  Gid g;
  std::memcpy(g.data(), a.s6_addr, 16);
  return g;
}

bool gid_is_ipv4_mapped(const Gid& g) {
  for (int i = 0; i < 10; ++i) {
    if (g[i] != 0) return false;
  }
  return g[10] == 0xff && g[11] == 0xff;
}

in_addr gid_to_ipv4(const Gid& g) {
  in_addr a;
  std::memcpy(&a.s_addr, &g[12], 4);
  return a;
}

in6_addr gid_to_ipv6(const Gid& g) {
  in6_addr a;
  std::memcpy(a.s6_addr, g.data(), 16);
  return a;
}

bool gid_is_zero(const Gid& g) { return g == kZeroGid; }

bool gid_is_link_local(const Gid& g) { return g[0] == 0xfe && (g[1] & 0xc0) == 0x80; }

bool gid_is_multicast(const Gid& g) {
  if (gid_is_ipv4_mapped(g)) return (g[12] & 0xf0) == 0xe0;
  return g[0] == 0xff;
}

int gid_family(const Gid& g) { return gid_is_ipv4_mapped(g) ? AF_INET : AF_INET6; }

Gid gid_link_local_from_mac(const MacAddr& mac) {
  Gid g{};
  g[0] = 0xfe;
  g[1] = 0x80;
  g[8] = mac[0] ^ 0x02;
  g[9] = mac[1];
  g[10] = mac[2];
  g[11] = 0xff;
  g[12] = 0xfe;
  g[13] = mac[3];
  g[14] = mac[4];
  g[15] = mac[5];
  return g;
}

MacAddr multicast_mac(const Gid& g) {
  if (gid_is_ipv4_mapped(g)) {  // RFC 1112: low 23 bits of the group
    return {0x01, 0x00, 0x5e, static_cast<uint8_t>(g[13] & 0x7f), g[14], g[15]};
  }
  return {0x33, 0x33, g[12], g[13], g[14], g[15]};  // RFC 2464
}

std::string format_gid(const Gid& g) {
  char buf[INET6_ADDRSTRLEN];
  if (gid_is_ipv4_mapped(g)) {
    in_addr a = gid_to_ipv4(g);
    inet_ntop(AF_INET, &a, buf, sizeof(buf));
  } else {
    in6_addr a = gid_to_ipv6(g);
    inet_ntop(AF_INET6, &a, buf, sizeof(buf));
  }
  return buf;
}

bool parse_gid(std::string_view text, Gid* out) {
  if (text.size() >= INET6_ADDRSTRLEN) return false;
  char buf[INET6_ADDRSTRLEN];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  in_addr a4;
  if (inet_pton(AF_INET, buf, &a4) == 1) {
    *out = gid_from_ipv4(a4);
    return true;
  }
  in6_addr a6;
  if (inet_pton(AF_INET6, buf, &a6) == 1) {
    *out = gid_from_ipv6(a6);
    return true;
  }
  return false;
}

std::string format_mac(const MacAddr& m) {
  char buf[18];
  std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

bool parse_mac(std::string_view text, MacAddr* out) {
  if (text.size() != 17) return false;
  MacAddr m;
  for (size_t i = 0; i < 6; ++i) {
    uint8_t v = 0;
    for (size_t j = 0; j < 2; ++j) {
      char c = text[i * 3 + j];
      uint8_t d;
      if (c >= '0' && c <= '9') {
        d = static_cast<uint8_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<uint8_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<uint8_t>(c - 'A' + 10);
      } else {
        return false;
      }
      v = static_cast<uint8_t>(v << 4 | d);
    }
    if (i < 5 && text[i * 3 + 2] != ':') return false;
    m[i] = v;
  }
  *out = m;
  return true;
}

}  // namespace burst::net
