#!/usr/bin/env bash
# Installs Debian's podman for the image test that loads joiner's image
# the way users do (hack/image: `podman load -i`, then `podman image
# inspect`). podman needs no daemon; the test runs it with the vfs storage
# driver in a temporary root, so it touches nothing of the machine's
# containers. The test fails when podman is missing, so a fresh CI machine
# must run this first; `make test` does. Idempotent: when podman already
# runs, it does nothing. Needs root (or sudo) and Debian's apt.
#
# Environment:
#   JOINER_PODMAN_SKIP_INSTALL=1  do not install; only report whether it is there
set -euo pipefail

if command -v podman >/dev/null && podman --version >/dev/null 2>&1; then
	exit 0
fi
if [[ ${JOINER_PODMAN_SKIP_INSTALL:-} == 1 ]]; then
	echo "podman: podman is missing; install it with: apt-get install -y --no-install-recommends podman" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null; then
	echo "podman: podman is missing and this is not a Debian-like machine (no apt-get); install podman" >&2
	exit 1
fi

sudo=()
if [[ $(id -u) != 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "podman: installing needs root: run 'apt-get install -y --no-install-recommends podman' as root" >&2
		exit 1
	fi
	sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists (or stale ones); try the
# install first and update only when it fails.
if ! "${sudo[@]}" apt-get install -y --no-install-recommends podman; then
	"${sudo[@]}" apt-get update
	"${sudo[@]}" apt-get install -y --no-install-recommends podman
fi
podman --version
