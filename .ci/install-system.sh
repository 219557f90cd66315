#!/usr/bin/env bash
# System setup for vx's code sandbox (see the README section "Running untrusted code: the sandbox"). Idempotent; never fails the
# caller: anything that cannot be done is reported as a warning and the sandbox falls back to
# a weaker layer (and says so in `vx doctor`).
#
#  - bubblewrap   the strongest isolation layer (bwrap)
#  - util-linux   unshare + setpriv (the middle layer; normally already installed)
#  - libseccomp2  the seccomp deny-list of the weakest layer
#  - pythonX.Y    a system interpreter of the project's Python version, for when the project's
#                 interpreter lives where the sandbox account cannot read it (e.g. under /root)
#  - vx-sandbox   a dedicated unprivileged account: what candidates run as when vx runs as root
#  - chromium     optional: a headless browser for the HTML page tests
set -u

warn() { echo "install-system: warning: $*" >&2; }
info() { echo "install-system: $*"; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo"
  else
    warn "not root and no passwordless sudo: skipping system packages and the vx-sandbox account"
    exit 0
  fi
fi

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
{ command -v unshare >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; } || need+=(util-linux)
if ! { ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2'; }; then
  need+=(libseccomp2)
fi
pyver="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
if [ -n "$pyver" ] && [ ! -x "/usr/bin/python$pyver" ] && [ ! -x "/usr/local/bin/python$pyver" ]; then
  need+=("python$pyver")
fi

if [ "${#need[@]}" -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq || warn "apt-get update failed"
    # One package at a time, so one that does not exist here does not block the others.
    for pkg in "${need[@]}"; do
      if $SUDO apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null; then
        info "installed $pkg"
      else
        warn "apt-get install $pkg failed"
      fi
    done
  else
    warn "apt-get is not available; install these with your package manager: ${need[*]}"
  fi
else
  info "system packages already present"
fi

# A headless browser for the HTML page tests (tests/test_pages_browser.py; they skip without one).
# Optional and never fatal: nothing in vx itself needs a browser.
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  info "chromium present"
elif command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  if $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 \
     || { $SUDO apt-get update -qq >/dev/null 2>&1 && \
          $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; }; then
    info "installed chromium (browser tests)"
  else
    warn "could not install chromium: the browser tests of the HTML pages will be skipped"
  fi
else
  warn "no chromium and no apt-get: the browser tests of the HTML pages will be skipped"
fi

if getent passwd vx-sandbox >/dev/null 2>&1; then
  info "account vx-sandbox exists"
elif command -v useradd >/dev/null 2>&1; then
  if $SUDO useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin vx-sandbox; then
    info "created account vx-sandbox"
  else
    warn "could not create the vx-sandbox account (candidates will run as nobody)"
  fi
else
  warn "useradd is not available; candidates will run as nobody when vx runs as root"
fi

# bwrap may be installed but unusable (e.g. user namespaces disabled in a container): say so.
if command -v bwrap >/dev/null 2>&1; then
  as_user=()
  if [ "$(id -u)" -eq 0 ] && getent passwd vx-sandbox >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
    as_user=(setpriv --reuid=vx-sandbox --regid=vx-sandbox --clear-groups)
  fi
  if out="$(cd / && "${as_user[@]}" bwrap --unshare-all --die-with-parent --ro-bind / / true 2>&1)"; then
    info "bwrap works"
  else
    warn "bwrap is installed but does not work here: $out"
  fi
fi
exit 0
