#!/usr/bin/env bash
# Builds the default sandbox image without any container registry: a minimal Debian bookworm
# made with debootstrap from the machine's own Debian mirror, then the same recipe as
# sandbox/Dockerfile (sandbox/setup-image.sh with sandbox/packages.txt) run in a chroot, then
# imported with `docker import`. `npm start`, `frognano solve` and the tests run it when the
# image is missing and no registry answers. Must run as root.
#
#   sandbox/build-offline.sh            build unless the image already exists
#   sandbox/build-offline.sh --force    re-import the image (from the cached root fs)
#   sandbox/build-offline.sh --no-cache rebuild the root fs too (implies --force)
#
# Environment: FROGNANO_SANDBOX_IMAGE (image name), FROGNANO_CACHE_DIR (default
# /var/cache/frognano), FROGNANO_DEBIAN_MIRROR (default: the machine's apt mirror).
set -euo pipefail

# Keep in sync with DEFAULT_SANDBOX_IMAGE in src/sandbox/docker-sandbox.ts (a test checks).
IMAGE="${FROGNANO_SANDBOX_IMAGE:-frognano/sandbox:py3-r2}"
SUITE=bookworm
CACHE_DIR="${FROGNANO_CACHE_DIR:-/var/cache/frognano}"
RECIPE_DIR="$(cd "$(dirname "$0")" && pwd)"

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
find_security_mirror() {
  local uri
  uri=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list /etc/apt/sources.list 2>/dev/null |
    grep -oE 'https?://[^[:space:]]+/debian-security/?' | head -n1 || true)
  echo "${uri:-http://deb.debian.org/debian-security}" | sed 's:/*$::'
}
MIRROR="${FROGNANO_DEBIAN_MIRROR:-$(find_mirror)}"
SECURITY_MIRROR="${FROGNANO_DEBIAN_SECURITY_MIRROR:-$(find_security_mirror)}"

# The cached root fs is only reused for the same recipe, mirror and architecture.
key=$({
  printf '%s|%s|%s|%s\n' "$SUITE" "$MIRROR" "$SECURITY_MIRROR" "$(uname -m)"
  cat "$RECIPE_DIR/packages.txt" "$RECIPE_DIR/setup-image.sh"
} | sha256sum | cut -c1-16)
ROOTFS_TAR="$CACHE_DIR/sandbox-rootfs-$SUITE-$key.tar"
DEBS_DIR="$CACHE_DIR/debootstrap-debs"
mkdir -p "$CACHE_DIR" "$DEBS_DIR"

# Several processes (test runs, a starting App) may ask for the image at once: one builds.
exec 9>"$CACHE_DIR/build-$key.lock"
flock 9
if [[ $force -eq 0 ]] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "image $IMAGE was built meanwhile; nothing to do"
  exit 0
fi

start=$(date +%s)
if [[ $no_cache -eq 1 || ! -s "$ROOTFS_TAR" ]]; then
  command -v debootstrap >/dev/null || {
    echo "build-offline.sh: debootstrap not found; apt-get install -y debootstrap" >&2
    exit 1
  }
  work=$(mktemp -d "${TMPDIR:-/tmp}/frognano-rootfs.XXXXXX")
  root="$work/root"
  cleanup() {
    umount "$root/proc" 2>/dev/null || true
    rm -rf --one-file-system "$work"
  }
  trap cleanup EXIT
  log "debootstrap $SUITE minbase from $MIRROR"
  # --cache-dir keeps the downloaded .debs, so a rebuild does not download them again.
  debootstrap --variant=minbase --cache-dir="$DEBS_DIR" \
    "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
    tail -n 40 "$work/debootstrap.log" >&2
    echo "build-offline.sh: debootstrap failed (mirror $MIRROR); see the lines above" >&2
    exit 1
  }

  log "running sandbox/setup-image.sh in the root fs (packages: $(grep -v '^#' "$RECIPE_DIR/packages.txt" | tr '\n' ' '))"
  # The same apt sources as the debian:bookworm image the Dockerfile starts from.
  rm -f "$root/etc/apt/sources.list.d/"*
  printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
    "$MIRROR" "$SUITE" "$MIRROR" "$SUITE" "$SECURITY_MIRROR" "$SUITE" >"$root/etc/apt/sources.list"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mkdir -p "$root/tmp/recipe"
  cp "$RECIPE_DIR/packages.txt" "$RECIPE_DIR/setup-image.sh" "$root/tmp/recipe/"
  mount -t proc proc "$root/proc"
  chroot "$root" /bin/sh /tmp/recipe/setup-image.sh >"$work/setup.log" 2>&1 || {
    tail -n 40 "$work/setup.log" >&2
    echo "build-offline.sh: sandbox/setup-image.sh failed in the chroot; see the lines above" >&2
    exit 1
  }
  umount "$root/proc"
  rm -rf "$root/tmp/recipe" "$root/etc/resolv.conf"
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
  --change 'ENV PATH=/home/frognano/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV HOME=/home/frognano' \
  --change 'CMD ["/bin/bash"]' \
  --message "frognano sandbox: debootstrap $SUITE minbase + sandbox/setup-image.sh" \
  "$ROOTFS_TAR" "$IMAGE" >/dev/null

# The image must actually run what the sandbox needs.
docker run --rm --network none "$IMAGE" \
  bash -c 'test "$(id -u)" = 1000 && python3 -c "import pytest, venv" && git --version >/dev/null && gcc --version >/dev/null && make --version >/dev/null && node --version >/dev/null && npm --version >/dev/null' ||
  {
    echo "build-offline.sh: the imported image $IMAGE failed its smoke check" >&2
    exit 1
  }
log "built $IMAGE in $(($(date +%s) - start))s"
