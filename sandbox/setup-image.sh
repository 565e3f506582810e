#!/bin/sh
# The sandbox image's recipe, run as root inside the Debian bookworm root file system by both
# builds: `RUN` in sandbox/Dockerfile and `chroot` in sandbox/build-offline.sh. Whatever is
# changed here changes both images, so bump SANDBOX_RECIPE in src/sandbox/docker-sandbox.ts.
set -eu
here=$(dirname "$0")
export DEBIAN_FRONTEND=noninteractive

apt-get update -q
# shellcheck disable=SC2046 # one package per word
apt-get install -y -q --no-install-recommends $(grep -v '^#' "$here/packages.txt")

# The agent runs as uid 1000 and owns the repository tree; git must accept that tree.
groupadd --gid 1000 frognano
useradd --uid 1000 --gid 1000 --create-home --home-dir /home/frognano --shell /bin/bash frognano
mkdir -p /testbed
chown 1000:1000 /testbed
printf '[safe]\n\tdirectory = *\n[init]\n\tdefaultBranch = main\n' >/etc/gitconfig

# Debian's pip refuses installs outside a venv (PEP 668). In a throwaway sandbox the user
# installs into ~/.local, so `pip install -e .` works as uid 1000 (a config file, because the
# sandbox sets its own environment and PATH for every command).
printf '[global]\nbreak-system-packages = true\ndisable-pip-version-check = true\n' >/etc/pip.conf
printf 'PATH="$HOME/.local/bin:$PATH"\n' >/etc/profile.d/frognano-user-bin.sh

# Package lists, caches and docs are not needed at run time.
apt-get clean
rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/* /usr/share/info/* /var/log/*.log
