#!/usr/bin/env bash
# Builds joiner's local control plane from the Go module proxy:
#   etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok.
#
# Each binary comes from its own small Go module under hack/controlplane/<name>/,
# so the main module never depends on k8s.io/kubernetes. Binaries land in
# $JOINER_K8S_BIN (default: bin/k8s at the repo root, gitignored) beside a
# ".<name>.stamp" file; a binary whose stamp matches is not rebuilt, so later
# runs take seconds.
#
# Environment:
#   JOINER_K8S_BIN      output directory (default <repo>/bin/k8s)
#   JOINER_K8S_FORCE=1  rebuild even when the stamps match
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mods="$root/hack/controlplane"
out=${JOINER_K8S_BIN:-$root/bin/k8s}
mkdir -p "$out"
out=$(cd "$out" && pwd)

GO=${GO:-go}

# The Kubernetes release is the one hack/controlplane/kubernetes/go.mod
# requires; every staging module must be pinned to the matching v0.x.y.
KUBE_VERSION=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit } $1 == "require" && $2 == "k8s.io/kubernetes" { print $3; exit }' "$mods/kubernetes/go.mod")
if [[ ! $KUBE_VERSION =~ ^v1\.[0-9]+\.[0-9]+$ ]]; then
	echo "controlplane: cannot read the k8s.io/kubernetes version from $mods/kubernetes/go.mod" >&2
	exit 1
fi
staging=v0.${KUBE_VERSION#v1.}
if bad=$(grep -E '^\s*k8s\.io/[a-z-]+ => k8s\.io/[a-z-]+ v' "$mods/kubernetes/go.mod" | grep -v " $staging\$"); then
	echo "controlplane: staging modules not pinned to $staging in $mods/kubernetes/go.mod:" >&2
	echo "$bad" >&2
	exit 1
fi

# Reproducible, self-contained, static builds with the local toolchain only.
export CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local GOFLAGS=
buildflags=(-trimpath -buildvcs=false)

kube_ldflags() {
	local v=$KUBE_VERSION major minor flags="-s -w"
	major=${v#v}; major=${major%%.*}
	minor=${v#v*.}; minor=${minor%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "$flags"
}

# stamp NAME MODDIR LDFLAGS: what a cached binary must have been built from.
stamp() {
	local name=$1 dir=$2 ldflags=$3
	{
		echo "name=$name"
		"$GO" env GOVERSION GOOS GOARCH
		echo "flags=${buildflags[*]} ldflags=$ldflags"
		cat "$dir"/go.mod "$dir"/go.sum
		if [[ -f "$dir/main.go" ]]; then cat "$dir/main.go"; fi
		if [[ -d "$dir/patches" ]]; then cat "$dir"/patches/*.patch; fi
	} | sha256sum | cut -d' ' -f1
}

# patched MODULE_DIR MODULE: when MODULE_DIR/patches holds patches for
# MODULE (a dependency's bug joiner works around; each patch says why), a
# copy of MODULE's source with them applied and a go.mod that builds against
# it, in a new temporary directory whose path it prints ("" without patches).
# A patch that no longer applies fails the build.
patched() {
	local dir=$1 module=$2 src tmp p
	if [[ ! -d "$dir/patches" ]]; then return 0; fi
	src=$(cd "$dir" && "$GO" mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	if [[ -z "$src" || ! -d "$src" ]]; then
		echo "controlplane: cannot find the source of $module for $dir/patches" >&2
		return 1
	fi
	tmp=$(mktemp -d) || return 1
	if ! cp -R "$src" "$tmp/src" || ! chmod -R u+w "$tmp/src"; then
		rm -rf "$tmp"
		return 1
	fi
	for p in "$dir"/patches/*.patch; do
		# outside any repository git apply works as patch(1) does
		if ! (cd "$tmp/src" && GIT_CEILING_DIRECTORIES="$tmp" git apply "$p"); then
			echo "controlplane: $p does not apply to $module" >&2
			rm -rf "$tmp"
			return 1
		fi
	done
	if ! cp "$dir/go.mod" "$tmp/go.mod" || ! cp "$dir/go.sum" "$tmp/go.sum" ||
		! (cd "$dir" && "$GO" mod edit -modfile="$tmp/go.mod" -replace="$module=$tmp/src"); then
		rm -rf "$tmp"
		return 1
	fi
	echo "$tmp"
}

# build NAME MODULE_DIR PACKAGE LDFLAGS [PATCHED_MODULE]
build() {
	local name=$1 dir=$2 pkg=$3 ldflags=$4 module=${5:-} want have="" start tmp="" modfile=()
	want=$(stamp "$name" "$dir" "$ldflags")
	if [[ -f "$out/.$name.stamp" ]]; then have=$(<"$out/.$name.stamp"); fi
	if [[ -x "$out/$name" && "$have" == "$want" && "${JOINER_K8S_FORCE:-}" != 1 ]]; then
		printf '%-24s cached\n' "$name"
		return 0
	fi
	start=$SECONDS
	rm -f "$out/.$name.stamp"
	# Called where set -e does not hold (others || ...), so each step that
	# can fail returns by itself: no stamp for a binary that was not built.
	if [[ -n "$module" ]]; then
		tmp=$(patched "$dir" "$module") || return 1
		if [[ -n "$tmp" ]]; then modfile=(-modfile="$tmp/go.mod"); fi
	fi
	local status=0
	(cd "$dir" && "$GO" build "${buildflags[@]}" "${modfile[@]}" -ldflags "$ldflags" -o "$out/$name.tmp" "$pkg") || status=$?
	if [[ -n "$tmp" ]]; then rm -rf "$tmp"; fi
	if ((status != 0)); then return 1; fi
	mv -f "$out/$name.tmp" "$out/$name" || return 1
	echo "$want" >"$out/.$name.stamp"
	printf '%-24s built in %ds\n' "$name" $((SECONDS - start))
}

start=$SECONDS
echo "control plane binaries in $out"

# Two lanes on a 2-core machine: the Kubernetes binaries share most of their
# packages and are built one after the other (the second and third reuse the
# build cache); etcd and kwok, which share little with them, fill the gaps.
kube() {
	local ld
	ld=$(kube_ldflags)
	for name in kube-apiserver kube-controller-manager kube-scheduler; do
		build "$name" "$mods/kubernetes" "k8s.io/kubernetes/cmd/$name" "$ld"
	done
}
others() {
	build etcd "$mods/etcd" . "-s -w"
	build kwok "$mods/kwok" sigs.k8s.io/kwok/cmd/kwok "-s -w" sigs.k8s.io/kwok
}

kube &
kube_pid=$!
others_status=0
others || others_status=$?
kube_status=0
wait "$kube_pid" || kube_status=$?
if ((kube_status != 0 || others_status != 0)); then
	echo "controlplane: build failed" >&2
	exit 1
fi
printf '%-24s %ds\n' "total" $((SECONDS - start))
