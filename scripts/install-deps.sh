#!/usr/bin/env bash
# Installs the Debian 12 packages gpucanary needs to build, test and benchmark,
# then the dashboard's JavaScript dependencies (web/package-lock.json).
# Idempotent: packages already present are left alone, and web/node_modules is
# rebuilt only when the lock file changed. Runs as root (or via sudo).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev        # libFuzzer and sanitizers for the fuzz target
  libexpected-dev                 # tl::expected: Result<T>
  libcli11-dev                    # CLI parsing
  nlohmann-json3-dev              # JSON output and test metadata
  libxxhash-dev                   # XXH3 series hashing
  zlib1g-dev                      # .gz recordings
  libyaml-cpp-dev                 # simulator scenario files
  libboost1.81-dev                # Boost.Beast/Asio: HTTP server and client (headers only)
  libssl-dev openssl              # TLS (HTTPS client and listener); the CLI for manual checks
  libprotobuf-dev protobuf-compiler  # remote_write protobuf messages
  libsnappy-dev                   # remote_write snappy block compression
  libre2-dev                      # label matchers (=~, !~) with Prometheus's RE2 syntax
  nettle-dev                      # MD5 for relabeling's hashmod, as Prometheus computes it
  libsqlite3-dev                  # releases, canaries and verdicts in the data directory
  prometheus                      # integration tests scrape the simulator with a real Prometheus
  libgtest-dev libgmock-dev       # unit tests
  libbenchmark-dev                # benchmarks
  nodejs                          # the dashboard's npm dependencies and its browser test
  chromium                        # the dashboard's browser test (tests/browser)
  curl python3-yaml               # scripts: benchmarks, the package and deployment checks
)
# npm comes with NodeSource's nodejs, which conflicts with Debian's npm package.
command -v npm >/dev/null || PACKAGES+=(npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The dashboard's JavaScript (uPlot, built into the binary; playwright-core
# for the browser test), exactly as the lock file pins it. `npm ci` rebuilds
# node_modules from scratch, so it runs only when the lock file differs from
# the one it last installed (a stamp inside node_modules).
web="$(dirname "$0")/../web"
stamp="$web/node_modules/.gpucanary-lock.sha256"
lock_sum=$(sha256sum < "$web/package-lock.json")
if [[ -f "$stamp" && "$(cat "$stamp")" == "$lock_sum" ]]; then
  echo "install-deps: web/node_modules up to date"
else
  npm ci --prefix "$web" --no-audit --no-fund
  echo "$lock_sum" > "$stamp"
fi
