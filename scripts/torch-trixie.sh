#!/usr/bin/env bash
# Builds a Debian trixie root holding python3-torch (torch 2.6, which has FSDP; Debian 12's torch
# 1.13 cannot import it under Python 3.11) and prints a command prefix that runs that root's
# python3 with this checkout's python/ folder on its PYTHONPATH, through bubblewrap:
#
#   scripts/torch-trixie.sh DIR          # root only (mmdebstrap writes DIR; downloads ~1 GB)
#   CRL_TORCH_FSDP_PYTHON="$(scripts/torch-trixie.sh DIR)" npx vitest run src/adapters/torch/torch-fsdp.test.ts
#   crl train ... --trainer torch --trainer-command "$(scripts/torch-trixie.sh DIR) -m crl_torch.torchrun \
#     --nnodes 1 --nproc_per_node 2 --rdzv_backend c10d --rdzv_endpoint localhost:0 -m crl_torch --shard fsdp"
#
# A DIR that already holds /usr/bin/python3 with torch is kept (only the command is printed), so
# the script is also how to get the command again. The prefix binds /tmp (crl's temporary files
# and save_hf's directories stay visible on both sides) and the host's /etc/hosts, shares the
# host's network (torchrun's rendezvous and gloo use loopback) and dies with its parent. Building
# needs root (mmdebstrap's root mode); running needs bwrap (root, or unprivileged user namespaces).
# Usage: scripts/torch-trixie.sh DIR   (MIRROR overrides http://deb.debian.org/debian)
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: scripts/torch-trixie.sh DIR" >&2
  exit 2
fi
DIR=$(realpath -m "$1")
REPO=$(cd "$(dirname "$0")/.." && pwd)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

has_torch() { [ -x "$DIR/usr/bin/python3" ] && prefix /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; }

prefix() {
  bwrap --bind "$DIR" / --proc /proc --dev /dev --bind /tmp /tmp --ro-bind /etc/hosts /etc/hosts \
    --ro-bind "$REPO/python" /crl-python --setenv PYTHONPATH /crl-python --die-with-parent -- "$@"
}

if ! has_torch; then
  for tool in mmdebstrap bwrap; do
    command -v "$tool" >/dev/null || { echo "torch-trixie: $tool is not installed (apt-get install $tool)" >&2; exit 1; }
  done
  if [ "$(id -u)" != 0 ]; then
    echo "torch-trixie: building the root needs root (mmdebstrap --mode root)" >&2
    exit 1
  fi
  if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
    echo "torch-trixie: $DIR is not empty and has no torch; remove it or name another directory" >&2
    exit 1
  fi
  # apt variant: the essential set plus apt, then python3-torch and what it depends on.
  # /crl-python is the mount point of the checkout's python/ folder.
  mmdebstrap --mode=root --variant=apt --include=python3-torch \
    --customize-hook='mkdir -p "$1/crl-python"' trixie "$DIR" "$MIRROR" >&2
  has_torch || { echo "torch-trixie: $DIR was built but its python3 cannot import torch" >&2; exit 1; }
fi
echo "bwrap --bind $DIR / --proc /proc --dev /dev --bind /tmp /tmp --ro-bind /etc/hosts /etc/hosts" \
  "--ro-bind $REPO/python /crl-python --setenv PYTHONPATH /crl-python --die-with-parent -- /usr/bin/python3"
