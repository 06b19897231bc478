#!/usr/bin/env bash
# Regenerates the shell completion scripts under completions/ from the command line.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --bin inboxctl
bin="${CARGO_TARGET_DIR:-target}/debug/inboxctl"
$bin completions bash > completions/inboxctl.bash
$bin completions zsh > completions/_inboxctl
$bin completions fish > completions/inboxctl.fish
$bin completions elvish > completions/inboxctl.elv
$bin completions powershell > completions/_inboxctl.ps1
echo "completions/ regenerated"
