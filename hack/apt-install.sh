#!/usr/bin/env bash
# Installs a Debian package the tests need beyond Go, gcc, git and kubectl:
#   chromium  the status page's headless browser tests (pkg/statuspage,
#             cmd/joiner) drive /usr/bin/chromium (about 40 s on a fresh
#             machine, measured in docs/run.md);
#   podman    the image test loads joiner's image the way users do
#             (hack/image: `podman load -i`, then `podman image inspect`);
#             it needs no daemon and runs with the vfs storage driver in a
#             temporary root, touching nothing of the machine's containers.
# Those tests fail when their program is missing, so a fresh CI machine must
# run this first; `make test` does (make chromium podman). Idempotent: when
# the program already runs, it does nothing. Needs root (or sudo) and apt.
#
# Usage: hack/apt-install.sh chromium|podman
# Environment:
#   JOINER_APT_SKIP_INSTALL=1  do not install; only report whether it is there
set -euo pipefail

pkg=${1:-}
case $pkg in
chromium) program=/usr/bin/chromium ;;
podman) program=podman ;;
*)
	echo "usage: $0 chromium|podman" >&2
	exit 2
	;;
esac

if command -v "$program" >/dev/null && "$program" --version >/dev/null 2>&1; then
	exit 0
fi
if [[ ${JOINER_APT_SKIP_INSTALL:-} == 1 ]]; then
	echo "$pkg: $program is missing; install it with: apt-get install -y --no-install-recommends $pkg" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null; then
	echo "$pkg: $program is missing and this is not a Debian-like machine (no apt-get); install $pkg" >&2
	exit 1
fi

sudo=()
if [[ $(id -u) != 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "$pkg: installing needs root: run 'apt-get install -y --no-install-recommends $pkg' as root" >&2
		exit 1
	fi
	sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists (or stale ones naming removed
# versions); try the install first and update only when it fails.
if ! "${sudo[@]}" apt-get install -y --no-install-recommends "$pkg"; then
	"${sudo[@]}" apt-get update
	"${sudo[@]}" apt-get install -y --no-install-recommends "$pkg"
fi
"$program" --version
