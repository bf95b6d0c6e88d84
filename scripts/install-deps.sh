#!/usr/bin/env bash
# Installs the Debian 12 packages that building, the demo, installing, testing and the
# corpus need: `install-deps.sh build|run|install|test|corpus` (run and install are the
# build's packages plus what the demo or the man pages need; test adds the test tools).
# Idempotent and quick when everything is present: it asks apt only for what is missing.
set -euo pipefail

# Hyperscan is packaged for amd64 only; elsewhere (arm64) its portable fork Vectorscan has
# the same API. The two conflict: where Vectorscan is installed it is kept. GPUALERT_HS_PACKAGE
# chooses (libhyperscan-dev or libvectorscan-dev).
hs_pkg=libhyperscan-dev
if [ "$(dpkg --print-architecture)" != amd64 ] ||
  dpkg-query -W -f='${Status}' libvectorscan-dev 2>/dev/null | grep -q "install ok installed"; then
  hs_pkg=libvectorscan-dev
fi
hs_pkg=${GPUALERT_HS_PACKAGE:-$hs_pkg}
build_pkgs=(cmake ninja-build g++ pkg-config make
  libcurl4-openssl-dev libre2-dev "$hs_pkg" libtomlplusplus-dev
  nlohmann-json3-dev zlib1g-dev lld)
run_pkgs=(python3)
install_pkgs=(pandoc)
test_pkgs=(libgtest-dev libgmock-dev libbenchmark-dev python3 python3-aiosmtpd pandoc
  openssl util-linux procps clang libclang-rt-14-dev slurm-wlm munge)
corpus_pkgs=(python3-torch)

want=("${build_pkgs[@]}")
case "${1:-build}" in
  build) ;;
  run) want+=("${run_pkgs[@]}") ;;
  install) want+=("${install_pkgs[@]}") ;;
  test) want+=("${test_pkgs[@]}") ;;
  corpus) want+=("${test_pkgs[@]}" "${corpus_pkgs[@]}") ;;
  *) echo "usage: $0 [build|run|install|test|corpus]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
