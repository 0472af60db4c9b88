#!/usr/bin/env bash
# Makes the Docker tests runnable on a machine without an image registry: starts a Docker daemon
# when none answers (root only; overlay2, else vfs; no bridge network, no iptables, as a CI
# container allows), then builds the base image the tests' own task folders start FROM
# (crl-test/debian:bookworm: Debian's minbase with python3 and pytest, for repo-repair's task
# folders) from Debian's packages with mmdebstrap, `docker import`ed. Idempotent: an answering
# daemon is kept, and so is an image whose crl.packages label lists the packages below (an image
# built with fewer is rebuilt under the same name).
# Usage: scripts/docker-setup.sh   (DOCKER_HOST, if set, names the daemon to use instead)
# CRL_DOCKERD_PIDFILE, if set, receives the pid of a dockerd this script started (and stays empty
# when one already answered), so the caller can stop exactly what was started for it.
set -euo pipefail
IMAGE=crl-test/debian:bookworm
PACKAGES=python3,python3-pytest
LOG=${CRL_DOCKERD_LOG:-${TMPDIR:-/tmp}/crl-dockerd.log}

answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if ! answers; then
  if [ -n "${DOCKER_HOST:-}" ]; then
    echo "docker-setup: DOCKER_HOST=$DOCKER_HOST does not answer" >&2
    exit 1
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "docker-setup: no Docker daemon answers, and starting one needs root" >&2
    exit 1
  fi
  for driver in overlay2 vfs; do
    echo "docker-setup: starting dockerd (storage driver $driver), log in $LOG" >&2
    dockerd --storage-driver "$driver" --bridge none --iptables=false >"$LOG" 2>&1 &
    pid=$!
    for _ in $(seq 1 60); do
      answers && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    if answers; then
      [ -z "${CRL_DOCKERD_PIDFILE:-}" ] || echo "$pid" >"$CRL_DOCKERD_PIDFILE"
      break
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  answers || { echo "docker-setup: dockerd did not start; see $LOG" >&2; exit 1; }
fi

have=$(docker image inspect --format '{{index .Config.Labels "crl.packages"}}' "$IMAGE" 2>/dev/null || true)
if [ "$have" != "$PACKAGES" ]; then
  echo "docker-setup: building $IMAGE ($PACKAGES) from Debian packages (mmdebstrap, about a minute)" >&2
  old=$(docker image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
  mmdebstrap --quiet --variant=minbase --include="$PACKAGES" bookworm - |
    docker import --change "LABEL crl.packages=$PACKAGES" - "$IMAGE" >/dev/null
  # The image it replaces, now untagged; kept if a container still uses it.
  [ -z "$old" ] || docker rmi "$old" >/dev/null 2>&1 || true
fi
echo "docker-setup: daemon $(docker version --format '{{.Server.Version}}'), $IMAGE present" >&2
