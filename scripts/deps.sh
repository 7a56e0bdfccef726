#!/usr/bin/env bash
# Installs the Debian packages ddpsim needs when they are missing: with
# apt-get when run as root, otherwise prints the command to run. Exit 0 when
# everything is present afterwards, 1 otherwise. `deps.sh fuzz` also wants
# clang and its libFuzzer runtime, for `make fuzz` only (not `make test`).
set -eu
pkgs=(build-essential libgsl-dev libcsv-dev libcriterion-dev libyaml-dev libxml2-dev libopenmpi-dev gnuplot-nox time python3)
if [ "${1:-}" = fuzz ]; then pkgs+=(clang libclang-rt-dev); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: run as root:  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: installed ${missing[*]}"
