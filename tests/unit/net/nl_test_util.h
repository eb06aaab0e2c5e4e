/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Hand-made netlink messages for the net/ unit tests. Written from the
// netlink wire layout (16-byte header, family header padded to 4, then
// {u16 len, u16 type, payload padded to 4} attributes) without libmnl, so the
// parsers under test are checked against an independent encoder.
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace burst::net::testing {

inline size_t align4(size_t n) { return (n + 3) & ~size_t{3}; }

class NlMsg {
 public:
  NlMsg(uint16_t type, uint16_t flags, const void* family_hdr, size_t family_len) {
    buf_.resize(16 + align4(family_len));
    std::memcpy(buf_.data() + 16, family_hdr, family_len);
    set_header(type, flags);
  }
  template <typename T>
  NlMsg(uint16_t type, uint16_t flags, const T& family_hdr)
      : NlMsg(type, flags, &family_hdr, sizeof(T)) {}

  NlMsg& attr(uint16_t type, const void* data, size_t len) {
    size_t off = buf_.size();
    buf_.resize(off + align4(4 + len));
    uint16_t alen = static_cast<uint16_t>(4 + len);
    std::memcpy(buf_.data() + off, &alen, 2);
    std::memcpy(buf_.data() + off + 2, &type, 2);
    if (len != 0) std::memcpy(buf_.data() + off + 4, data, len);
    update_len();
    return *this;
  }
  NlMsg& u8(uint16_t type, uint8_t v) { return attr(type, &v, 1); }
  NlMsg& u32(uint16_t type, uint32_t v) { return attr(type, &v, 4); }
  NlMsg& str(uint16_t type, const std::string& s) { return attr(type, s.c_str(), s.size() + 1); }
  NlMsg& bytes(uint16_t type, std::vector<uint8_t> v) { return attr(type, v.data(), v.size()); }
  // Raw bytes appended after the attributes (no attribute header).
  NlMsg& raw(const void* data, size_t len) {
    size_t off = buf_.size();
    buf_.resize(off + align4(len));
    std::memcpy(buf_.data() + off, data, len);
    update_len();
    return *this;
  }

  const nlmsghdr* hdr() const { return reinterpret_cast<const nlmsghdr*>(buf_.data()); }
  nlmsghdr* mutable_hdr() { return reinterpret_cast<nlmsghdr*>(buf_.data()); }
  const std::vector<uint8_t>& data() const { return buf_; }

 private:
  void set_header(uint16_t type, uint16_t flags) {
    nlmsghdr h{};
    h.nlmsg_len = static_cast<uint32_t>(buf_.size());
    h.nlmsg_type = type;
    h.nlmsg_flags = flags;
    h.nlmsg_seq = 7;
    h.nlmsg_pid = 0;
    std::memcpy(buf_.data(), &h, sizeof(h));
  }
  void update_len() {
    uint32_t len = static_cast<uint32_t>(buf_.size());
    std::memcpy(buf_.data(), &len, 4);
  }

  std::vector<uint8_t> buf_;  // heap storage: aligned for nlmsghdr
};

// Decodes the attributes of a message built by the code under test.
// Returns false on a malformed layout.
inline bool decode_attrs(const nlmsghdr* nlh, size_t family_len,
                         std::map<uint16_t, std::vector<uint8_t>>* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(nlh);
  size_t off = 16 + align4(family_len);
  if (nlh->nlmsg_len < off) return false;
  while (off < nlh->nlmsg_len) {
    if (off + 4 > nlh->nlmsg_len) return false;
    uint16_t len, type;
    std::memcpy(&len, p + off, 2);
    std::memcpy(&type, p + off + 2, 2);
    if (len < 4 || off + len > nlh->nlmsg_len) return false;
    (*out)[type] = std::vector<uint8_t>(p + off + 4, p + off + len);
    off += align4(len);
  }
  return off == nlh->nlmsg_len;
}

}  // namespace burst::net::testing
