#!/usr/bin/env bash
# Builds the versitygw S3 server (github.com/versity/versitygw) into
# .cache/bin/versitygw, idempotently. The S3 tests of pipeline/lake/s3store
# and cmd/internal/cli start it on loopback with its posix backend; they skip
# when the binary is absent. versitygw is a separate tool, never a
# dependency of cualake's go.mod: `go install pkg@version` builds it in its
# own module context.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="${VERSITYGW_VERSION:-v1.8.0}"
BIN="$PWD/.cache/bin"
if [ -x "$BIN/versitygw" ] && [ -f "$BIN/versitygw.version" ] && [ "$(cat "$BIN/versitygw.version")" = "$VERSION" ]; then
  exit 0
fi
mkdir -p "$BIN"
echo "setup: building versitygw $VERSION into $BIN (once)"
# GOWORK=off and GOFLAGS= keep this repository's workspace and flags out of
# the build of an unrelated module.
GOWORK=off GOFLAGS= GOBIN="$BIN" go install "github.com/versity/versitygw/cmd/versitygw@$VERSION"
echo "$VERSION" >"$BIN/versitygw.version"
