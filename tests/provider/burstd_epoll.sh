#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burstd with its control thread on the epoll loop (the fallback where io_uring
# is refused): stands in for burstd in a provider test (netns.provider_epoll).
# exec keeps the pid the test started, so its kills reach burstd itself.
exec "${BURSTD_EPOLL_REAL:?BURSTD_EPOLL_REAL: the burstd binary}" --event-loop epoll "$@"
