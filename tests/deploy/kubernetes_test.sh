#!/bin/sh
# ctest deploy/kubernetes and deploy/kubernetes_mutations: the Kubernetes
# manifests checked without a cluster (tests/deploy/kubernetes/validate.js).
#   kubernetes_test.sh [--self-test] MANIFESTS IRONTUNED IRONTUNE_CLIENT
# Exits 77 (skipped) where Node.js or the npm packages that
# scripts/install-deps --k8s-tests installs are missing. A kubectl on PATH
# (1.21 or later) also renders the kustomizations, offline.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix=${IRONTUNE_K8S_TESTS_PREFIX:-/usr/local/lib/irontune-k8s-tests}
node=$(command -v node || command -v nodejs || true)
if [ -z "$node" ]; then
  echo "skipped: Node.js is not installed (scripts/install-deps --k8s-tests)"
  exit 77
fi
mode=""
if [ "${1:-}" = --self-test ]; then
  mode=--self-test
  shift
fi
if [ -z "$mode" ] && kubectl=$(command -v kubectl); then
  mode="--kubectl $kubectl"
fi
# $mode is one or two words without spaces of their own.
# shellcheck disable=SC2086
exec "$node" "$here/kubernetes/validate.js" --modules "$prefix/node_modules" \
  --irontuned "$2" --client "$3" $mode "$1"
