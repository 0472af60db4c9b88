#!/usr/bin/env bash
# Builds a Debian root holding a newer torch than Debian 12's (1.13, which cannot import FSDP under
# Python 3.11, and which no transformers release supports) and prints a command prefix that runs
# that root's python3 with this checkout's python/ folder on its PYTHONPATH, through bubblewrap:
#
#   scripts/torch-root.sh DIR                  # trixie's python3-torch (torch 2.6, FSDP); ~1 GB download
#   scripts/torch-root.sh --transformers DIR   # sid's python3-transformers and the torch it needs; ~2 GB
#   CRL_TORCH_FSDP_PYTHON="$(scripts/torch-root.sh DIR)" npx vitest run src/adapters/torch/torch-fsdp.test.ts
#   CRL_TORCH_HF_PYTHON="$(scripts/torch-root.sh --transformers DIR)" npx vitest run src/adapters/torch/torch-transformers.test.ts
#   crl train ... --trainer torch --trainer-command "$(scripts/torch-root.sh DIR) -m crl_torch.torchrun \
#     --nnodes 1 --nproc_per_node 2 --rdzv_backend c10d --rdzv_endpoint localhost:0 -m crl_torch --shard fsdp"
#
# Debian packages transformers only in sid (unstable), whose Release file expires within a week:
# a mirror snapshot older than that is accepted here (Acquire::Check-Valid-Until false).
# A DIR that already holds /usr/bin/python3 with what was asked for is kept (only the command is
# printed), so the script is also how to get the command again. The prefix binds /tmp (crl's
# temporary files and save_hf's directories stay visible on both sides) and the host's /etc/hosts,
# shares the host's network (torchrun's rendezvous and gloo use loopback) and dies with its parent.
# Building needs root (mmdebstrap's root mode); running needs bwrap (root, or unprivileged user
# namespaces).
# The packages come from the Debian mirror this machine's apt already uses (the first `.../debian`
# URI of /etc/apt/sources.list and sources.list.d, one-line or deb822), so a local mirror or proxy is
# respected; MIRROR overrides it, and without either mmdebstrap picks its own default.
# Usage: scripts/torch-root.sh [--transformers] DIR   (MIRROR=URL to name another mirror)
set -euo pipefail
suite=trixie package=python3-torch module=torch
if [ "${1:-}" = --transformers ]; then
  suite=sid package=python3-transformers module=transformers
  shift
fi
if [ $# -ne 1 ]; then
  echo "usage: scripts/torch-root.sh [--transformers] DIR" >&2
  exit 2
fi
DIR=$(realpath -m "$1")
REPO=$(cd "$(dirname "$0")/.." && pwd)
host_mirror() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk '/^[[:space:]]*#/ { next }
      $1 == "URIs:" { for (i = 2; i <= NF; i++) print $i }
      $1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; break } }' "$f"
  done | grep -E '^[a-z+]+://.*/debian/?$' | head -n 1
}
MIRROR=${MIRROR:-$(host_mirror)}

has_module() { [ -x "$DIR/usr/bin/python3" ] && prefix /usr/bin/python3 -c "import torch, $module" >/dev/null 2>&1; }

prefix() {
  bwrap --bind "$DIR" / --proc /proc --dev /dev --bind /tmp /tmp --ro-bind /etc/hosts /etc/hosts \
    --ro-bind "$REPO/python" /crl-python --setenv PYTHONPATH /crl-python --die-with-parent -- "$@"
}

if ! has_module; then
  for tool in mmdebstrap bwrap; do
    command -v "$tool" >/dev/null || { echo "torch-root: $tool is not installed (apt-get install $tool)" >&2; exit 1; }
  done
  if [ "$(id -u)" != 0 ]; then
    echo "torch-root: building the root needs root (mmdebstrap --mode root)" >&2
    exit 1
  fi
  if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
    echo "torch-root: $DIR is not empty and its python3 cannot import $module; remove it or name another directory" >&2
    exit 1
  fi
  # apt variant: the essential set plus apt, then the package and what it depends on.
  # /crl-python is the mount point of the checkout's python/ folder.
  mmdebstrap --mode=root --variant=apt --include="$package" --aptopt='Acquire::Check-Valid-Until "false"' \
    --customize-hook='mkdir -p "$1/crl-python"' "$suite" "$DIR" ${MIRROR:+"$MIRROR"} >&2
  has_module || { echo "torch-root: $DIR was built but its python3 cannot import $module" >&2; exit 1; }
fi
echo "bwrap --bind $DIR / --proc /proc --dev /dev --bind /tmp /tmp --ro-bind /etc/hosts /etc/hosts" \
  "--ro-bind $REPO/python /crl-python --setenv PYTHONPATH /crl-python --die-with-parent -- /usr/bin/python3"
