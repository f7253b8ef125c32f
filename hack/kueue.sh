#!/usr/bin/env bash
# Builds Kueue's manager from the Go module proxy (sigs.k8s.io/kueue, the
# version hack/controlplane/kueue/go.mod requires) for the gang end-to-end
# test (make e2e-kueue), and copies the module's CRDs and webhook manifests
# beside it. Like hack/controlplane.sh, a binary whose stamp matches is not
# rebuilt. A fresh build takes several minutes (Kueue links every job
# framework it integrates), which is why it is not part of `make test`.
#
# Environment:
#   JOINER_KUEUE_BIN     output directory (default <repo>/bin/kueue)
#   JOINER_KUEUE_FORCE=1 rebuild even when the stamp matches
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/hack/controlplane/kueue"
out=${JOINER_KUEUE_BIN:-$root/bin/kueue}
mkdir -p "$out"
out=$(cd "$out" && pwd)
GO=${GO:-go}
export CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local GOFLAGS=
flags=(-trimpath -buildvcs=false)
ldflags="-s -w"

want=$({ echo kueue; "$GO" env GOVERSION GOOS GOARCH; echo "${flags[*]} $ldflags"; cat "$mod/go.mod" "$mod/go.sum"; } | sha256sum | cut -d' ' -f1)
have=""
if [[ -f "$out/.kueue.stamp" ]]; then have=$(<"$out/.kueue.stamp"); fi
if [[ -x "$out/kueue" && "$have" == "$want" && "${JOINER_KUEUE_FORCE:-}" != 1 ]]; then
	echo "kueue                    cached ($out)"
	exit 0
fi
start=$SECONDS
rm -f "$out/.kueue.stamp"
(cd "$mod" && "$GO" build "${flags[@]}" -ldflags "$ldflags" -o "$out/kueue.tmp" sigs.k8s.io/kueue/cmd/kueue)
src=$(cd "$mod" && "$GO" list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
rm -rf "$out/crds" && mkdir -p "$out/crds"
cp "$src"/config/components/crd/bases/*.yaml "$out/crds/"
cp "$src/config/components/webhook/manifests.yaml" "$out/webhooks.yaml"
chmod u+w "$out"/crds/*.yaml "$out/webhooks.yaml"
mv -f "$out/kueue.tmp" "$out/kueue"
echo "$want" >"$out/.kueue.stamp"
printf '%-24s built in %ds (%s)\n' kueue $((SECONDS - start)) "$out"
