#!/usr/bin/env bash
# Builds the default sandbox image without any container registry: a minimal Debian made
# with debootstrap from the machine's own Debian mirror, imported with `docker import`.
# Used by CI (and any machine that cannot pull python:3.12-slim). Must run as root.
#
#   sandbox/build-offline.sh            build unless the image already exists
#   sandbox/build-offline.sh --force    re-import the image (from the cached root fs)
#   sandbox/build-offline.sh --no-cache rebuild the root fs too (implies --force)
#
# Environment: FROGNANO_SANDBOX_IMAGE (image name), FROGNANO_CACHE_DIR (default
# /var/cache/frognano), FROGNANO_DEBIAN_MIRROR (default: the machine's apt mirror).
set -euo pipefail

# Keep in sync with DEFAULT_SANDBOX_IMAGE in src/sandbox/docker-sandbox.ts.
IMAGE="${FROGNANO_SANDBOX_IMAGE:-frognano/sandbox:py3}"
SUITE=bookworm
CACHE_DIR="${FROGNANO_CACHE_DIR:-/var/cache/frognano}"
PACKAGES=python3,python3-pip,python3-venv,python3-pytest,git,ca-certificates,bash,procps
# Bump when the root fs recipe below changes, so cached root file systems are not reused.
RECIPE_VERSION=1

force=0
no_cache=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --no-cache) force=1 no_cache=1 ;;
    -h | --help)
      sed -n '2,12p' "$0"
      exit 0
      ;;
    *)
      echo "build-offline.sh: unknown argument '$arg' (use --force or --no-cache)" >&2
      exit 2
      ;;
  esac
done

log() { printf '[build-offline %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

command -v docker >/dev/null || {
  echo "build-offline.sh: docker CLI not found; install docker.io" >&2
  exit 1
}
if ! docker info >/dev/null 2>&1; then
  echo "build-offline.sh: no Docker engine reachable (is dockerd running? DOCKER_HOST=${DOCKER_HOST:-unset})" >&2
  exit 1
fi

if [[ $force -eq 0 ]] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "image $IMAGE already exists; nothing to do (use --force to rebuild)"
  exit 0
fi

# The mirror this machine's apt already uses (deb822 or one-line format).
find_mirror() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list /etc/apt/sources.list; do
    [[ -r "$f" ]] || continue
    uri=$(grep -hoE '(URIs:[[:space:]]*|^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?)https?://[^[:space:]]+/debian/?([[:space:]]|$)' "$f" |
      grep -oE 'https?://[^[:space:]]+' | grep -v -- '-security' | head -n1 || true)
    if [[ -n "$uri" ]]; then
      echo "${uri%/}"
      return 0
    fi
  done
  echo "http://deb.debian.org/debian"
}
MIRROR="${FROGNANO_DEBIAN_MIRROR:-$(find_mirror)}"

key=$(printf '%s|%s|%s|%s' "$SUITE" "$PACKAGES" "$RECIPE_VERSION" "$(uname -m)" | sha256sum | cut -c1-16)
ROOTFS_TAR="$CACHE_DIR/sandbox-rootfs-$SUITE-$key.tar"
DEBS_DIR="$CACHE_DIR/debootstrap-debs"
mkdir -p "$CACHE_DIR" "$DEBS_DIR"

start=$(date +%s)
if [[ $no_cache -eq 1 || ! -s "$ROOTFS_TAR" ]]; then
  command -v debootstrap >/dev/null || {
    echo "build-offline.sh: debootstrap not found; apt-get install -y debootstrap" >&2
    exit 1
  }
  work=$(mktemp -d "${TMPDIR:-/tmp}/frognano-rootfs.XXXXXX")
  cleanup() { rm -rf --one-file-system "$work"; }
  trap cleanup EXIT
  root="$work/root"
  log "debootstrap $SUITE from $MIRROR (packages: $PACKAGES)"
  # --cache-dir keeps the downloaded .debs, so a rebuild does not download them again.
  debootstrap --variant=minbase --include="$PACKAGES" --cache-dir="$DEBS_DIR" \
    "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
    tail -n 40 "$work/debootstrap.log" >&2
    echo "build-offline.sh: debootstrap failed (mirror $MIRROR); see the lines above" >&2
    exit 1
  }

  log "configuring the root fs (user frognano 1000:1000, /testbed)"
  # Written directly: minbase has no useradd, and the entries are all we need.
  grep -q '^frognano:' "$root/etc/group" || echo 'frognano:x:1000:' >>"$root/etc/group"
  grep -q '^frognano:' "$root/etc/passwd" ||
    echo 'frognano:x:1000:1000:frognano sandbox:/home/frognano:/bin/bash' >>"$root/etc/passwd"
  if [[ -f "$root/etc/shadow" ]] && ! grep -q '^frognano:' "$root/etc/shadow"; then
    echo 'frognano:!:19000:0:99999:7:::' >>"$root/etc/shadow"
  fi
  mkdir -p "$root/home/frognano" "$root/testbed"
  chown 1000:1000 "$root/home/frognano" "$root/testbed"
  chmod 755 "$root/home/frognano" "$root/testbed"
  # Git refuses to work in a tree owned by someone else; the tree is always ours here.
  printf '[safe]\n\tdirectory = *\n[init]\n\tdefaultBranch = main\n' >"$root/etc/gitconfig"
  # Slim down: package lists, caches and docs are not needed at run time.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log
  # Device nodes and mounts are provided by the container runtime.
  rm -rf "${root:?}"/dev/* "${root:?}"/proc/* "${root:?}"/sys/*

  log "archiving the root fs to $ROOTFS_TAR"
  tar --numeric-owner --xattrs -C "$root" -cf "$ROOTFS_TAR.partial" .
  mv -f "$ROOTFS_TAR.partial" "$ROOTFS_TAR"
else
  log "using cached root fs $ROOTFS_TAR"
fi

log "importing $IMAGE"
docker import \
  --change 'USER 1000:1000' \
  --change 'WORKDIR /testbed' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV HOME=/home/frognano' \
  --change 'CMD ["/bin/bash"]' \
  --message "frognano sandbox: debootstrap $SUITE minbase" \
  "$ROOTFS_TAR" "$IMAGE" >/dev/null

# The image must actually run what the sandbox needs.
docker run --rm --network none "$IMAGE" \
  bash -c 'test "$(id -u)" = 1000 && python3 -c "import pytest, venv, ensurepip" && git --version >/dev/null' ||
  {
    echo "build-offline.sh: the imported image $IMAGE failed its smoke check" >&2
    exit 1
  }
log "built $IMAGE in $(($(date +%s) - start))s"
