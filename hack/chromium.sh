#!/usr/bin/env bash
# Installs Debian's chromium for the status page's headless browser test
# (pkg/statuspage, cmd/joiner). The test drives /usr/bin/chromium directly and
# fails when it is missing, so a fresh CI machine must run this first;
# `make test` does. Idempotent: when /usr/bin/chromium already runs, it does
# nothing. Needs root (or sudo) and Debian's apt; about 40 s on a fresh
# machine (measured in docs/run.md).
#
# Environment:
#   JOINER_CHROMIUM_SKIP_INSTALL=1  do not install; only report whether it is there
set -euo pipefail

if [[ -x /usr/bin/chromium ]] && /usr/bin/chromium --version >/dev/null 2>&1; then
	exit 0
fi
if [[ ${JOINER_CHROMIUM_SKIP_INSTALL:-} == 1 ]]; then
	echo "chromium: /usr/bin/chromium is missing; install it with: apt-get install -y chromium" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null; then
	echo "chromium: /usr/bin/chromium is missing and this is not a Debian-like machine (no apt-get); install a chromium at /usr/bin/chromium" >&2
	exit 1
fi

sudo=()
if [[ $(id -u) != 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "chromium: installing needs root: run 'apt-get install -y chromium' as root" >&2
		exit 1
	fi
	sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists (or stale ones naming removed
# versions); try the install first and update only when it fails.
if ! "${sudo[@]}" apt-get install -y --no-install-recommends chromium; then
	"${sudo[@]}" apt-get update
	"${sudo[@]}" apt-get install -y --no-install-recommends chromium
fi
/usr/bin/chromium --version
