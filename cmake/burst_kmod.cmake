# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The kernel module (kmod/, docs/kmod.md): a target `kmod`, never part of `all`, that builds burst.ko
# with the kernel's own build system against BURST_KMOD_KDIR, in a copy of kmod/ + abi/burst_kmod.h
# under the build tree (kbuild writes its objects next to the sources; the source tree stays clean):
#   ninja -C build/default kmod   ->   build/default/kmod/kmod/burst.ko
# BURST_KMOD_KDIR defaults to the headers of the kernel the interop guests boot (what Debian's
# linux-image-amd64 depends on, as tests/interop/lib/guest.sh picks it): /usr/src/linux-headers-V.
# Without headers the target is absent and configuration says what to install.
option(BURST_KMOD "Offer the `kmod` target (out of `all`) when kernel headers are installed" ON)
if(NOT BURST_KMOD)
  return()
endif()
if(NOT DEFINED CACHE{BURST_KMOD_KDIR})
  set(_kver "")
  find_program(_burst_apt_cache apt-cache)
  if(_burst_apt_cache)
    execute_process(COMMAND ${_burst_apt_cache} depends linux-image-amd64
                    OUTPUT_VARIABLE _deps ERROR_QUIET TIMEOUT 20)
    if(_deps MATCHES "Depends: linux-image-([0-9][^\n]*-amd64)")
      set(_kver "${CMAKE_MATCH_1}")
    endif()
  endif()
  set(_kdir "")
  if(_kver AND EXISTS "/usr/src/linux-headers-${_kver}/Makefile")
    set(_kdir "/usr/src/linux-headers-${_kver}")
  endif()
  set(BURST_KMOD_KDIR "${_kdir}" CACHE PATH "kernel build directory for the module (linux-headers-V)")
endif()
if(NOT BURST_KMOD_KDIR OR NOT EXISTS "${BURST_KMOD_KDIR}/Makefile")
  message(STATUS "kmod: no kernel headers (apt-get install linux-headers-<the guests' version>, "
                 "scripts/install-deps.sh): no `kmod` target")
  return()
endif()
set(_out ${PROJECT_BINARY_DIR}/kmod)
add_custom_target(kmod
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${_out}/kmod ${_out}/abi
  COMMAND ${CMAKE_COMMAND} -E copy_directory ${PROJECT_SOURCE_DIR}/kmod ${_out}/kmod
  COMMAND ${CMAKE_COMMAND} -E copy ${PROJECT_SOURCE_DIR}/abi/burst_kmod.h ${_out}/abi/burst_kmod.h
  COMMAND make -C ${BURST_KMOD_KDIR} M=${_out}/kmod modules
  BYPRODUCTS ${_out}/kmod/burst.ko
  COMMENT "kmod: burst.ko against ${BURST_KMOD_KDIR}"
  USES_TERMINAL VERBATIM)
message(STATUS "kmod: target `kmod` (not in all) builds burst.ko against ${BURST_KMOD_KDIR}")
