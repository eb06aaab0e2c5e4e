# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The optional parts of burst: BURST_WITH_XDP, BURST_WITH_DPDK and BURST_WITH_DSA
# are AUTO (the default: built when their dependencies are found), ON (built;
# configuration fails, saying what to install, when a dependency is missing) or
# OFF. Configuration prints one line per part: built, or skipped and why. After
# this file, BURST_WITH_<PART> is ON or OFF (a normal variable over the cache
# entry, which keeps what was asked for), so `if(BURST_WITH_XDP)` works as before.

# burst_part_option(PART HELP): the cache entry, AUTO unless given.
function(burst_part_option part help)
  set(BURST_WITH_${part} AUTO CACHE STRING "${help}: AUTO (when found), ON or OFF")
  set_property(CACHE BURST_WITH_${part} PROPERTY STRINGS AUTO ON OFF)
endfunction()

# burst_resolve_part(PART LABEL MISSING WHAT_FOUND): MISSING is "" when every
# dependency was found, else "<what is missing>; apt-get install <packages>".
function(burst_resolve_part part label missing found)
  set(asked "${BURST_WITH_${part}}")
  string(TOUPPER "${asked}" asked_upper)
  if(asked_upper STREQUAL "AUTO")
    if(missing STREQUAL "")
      message(STATUS "${label}: built (${found})")
      set(BURST_WITH_${part} ON PARENT_SCOPE)
    else()
      message(STATUS "${label}: skipped (${missing})")
      set(BURST_WITH_${part} OFF PARENT_SCOPE)
    endif()
  elseif(asked)
    if(NOT missing STREQUAL "")
      message(FATAL_ERROR "${label}: BURST_WITH_${part}=${asked} but ${missing} "
                          "(or configure with -DBURST_WITH_${part}=AUTO to skip it)")
    endif()
    message(STATUS "${label}: built (${found})")
    set(BURST_WITH_${part} ON PARENT_SCOPE)
  elseif(asked_upper MATCHES "^(OFF|NO|FALSE|N|0|IGNORE|NOTFOUND)$" OR asked_upper MATCHES "-NOTFOUND$")
    message(STATUS "${label}: skipped (BURST_WITH_${part}=${asked})")
    set(BURST_WITH_${part} OFF PARENT_SCOPE)
  else()
    message(FATAL_ERROR "BURST_WITH_${part}=${asked}: expected AUTO, ON or OFF")
  endif()
endfunction()

burst_part_option(XDP "Build the AF_XDP datapath backend (libxdp, libbpf, clang for the XDP program)")
burst_part_option(DPDK "Build the DPDK datapath backend (DPDK 22.11)")
burst_part_option(DSA "Build the Intel DSA copy engine (libaccel-config)")

# AF_XDP: libxdp and libbpf, and clang for bpf/ (the XDP program).
set(_missing "")
set(_pkgs "")
pkg_check_modules(BURST_PROBE_LIBXDP QUIET libxdp)
pkg_check_modules(BURST_PROBE_LIBBPF QUIET libbpf)
find_program(BURST_PROBE_CLANG NAMES clang clang-14)
if(NOT BURST_PROBE_LIBXDP_FOUND)
  list(APPEND _missing libxdp)
  list(APPEND _pkgs libxdp-dev)
endif()
if(NOT BURST_PROBE_LIBBPF_FOUND)
  list(APPEND _missing libbpf)
  list(APPEND _pkgs libbpf-dev)
endif()
if(NOT BURST_PROBE_CLANG)
  list(APPEND _missing clang)
  list(APPEND _pkgs clang)
endif()
if(_missing)
  string(REPLACE ";" ", " _missing "${_missing}")
  string(REPLACE ";" " " _pkgs "${_pkgs}")
  set(_missing "${_missing} not found; apt-get install ${_pkgs}")
endif()
burst_resolve_part(XDP "XDP" "${_missing}"
  "libxdp ${BURST_PROBE_LIBXDP_VERSION}, libbpf ${BURST_PROBE_LIBBPF_VERSION}")

# DPDK: libdpdk through pkg-config (Debian's libdpdk-dev, pulled in by dpdk-dev).
pkg_check_modules(BURST_PROBE_LIBDPDK QUIET libdpdk)
set(_missing "")
if(NOT BURST_PROBE_LIBDPDK_FOUND)
  set(_missing "libdpdk not found; apt-get install dpdk-dev")
endif()
burst_resolve_part(DPDK "DPDK" "${_missing}" "DPDK ${BURST_PROBE_LIBDPDK_VERSION}")

# DSA: libaccel-config. The tree has no DSA copy engine yet: found, it is only
# recorded (the CPU copier does every copy).
pkg_check_modules(BURST_PROBE_ACCEL QUIET libaccel-config)
set(_missing "")
if(NOT BURST_PROBE_ACCEL_FOUND)
  set(_missing "libaccel-config not found; apt-get install libaccel-config-dev")
endif()
burst_resolve_part(DSA "DSA" "${_missing}"
  "libaccel-config ${BURST_PROBE_ACCEL_VERSION} found; no DSA copy engine in the tree yet, the CPU copier does every copy")
unset(_missing)
unset(_pkgs)
