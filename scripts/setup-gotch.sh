#!/usr/bin/env bash
# setup-gotch.sh: make github.com/sugarme/gotch v0.8.0 build against the
# libtorch available on this machine, without touching go.mod/go.sum.
#
# gotch v0.8.0 is generated for libtorch 2.0.1 and hard-codes CUDA link flags
# and the pre-C++11 ABI. This script:
#   1. installs Debian's libtorch-dev (1.13.1, CPU) if it is missing (CPU mode),
#   2. copies gotch's module source into third_party/gotch (git-ignored),
#   3. rewrites libtch/lib.go with cgo flags for the chosen libtorch,
#   4. stubs every generated op wrapper that does not compile against that
#      libtorch (found mechanically from compiler errors, iterated to a fixpoint)
#      with a runtime error thrown inside gotch's PROTECT block, so a call returns
#      a Go error instead of failing the build,
#   5. fixes gotch v0.8.0 runtime bugs in its Go wrappers (below),
#   6. writes go.work (git-ignored) that replaces gotch with the patched copy,
#   7. builds gotch once so later builds hit the Go build cache.
#
# In CPU mode it also installs OpenBLAS (libopenblas0-openmp) when the system
# BLAS is Debian's reference netlib BLAS, which Debian's libtorch links by
# default and which makes every matmul 2-3x slower (CUALAKE_SKIP_OPENBLAS=1
# to leave the BLAS alone).
#
# Idempotent and fast when done: a stamp (third_party/gotch.stamp) records the
# sha256 of this script with the mode and libtorch it patched for, and the
# sha256 of the patched tree and go.work it produced. When both still match,
# nothing is redone (CUALAKE_FORCE_GOTCH=1 redoes it anyway). Otherwise
# third_party/gotch is re-created from the pristine module source and patched
# again (the compile check takes ~20 s per round).
#
# Modes:
#   (default)                                CPU, Debian libtorch-dev 1.13.1 in /usr
#   CUALAKE_TORCH=cuda LIBTORCH=/path/to/libtorch
#                                            CUDA libtorch (gotch v0.8.0 targets 2.0.1
#                                            cu118); see docs/gpu.md. NOT tested on a GPU.
# Other knobs:
#   CUALAKE_SKIP_BUILD=1   skip the final warm-up `go build` of gotch.
set -euo pipefail

GOTCH_VERSION=v0.8.0
MODE="${CUALAKE_TORCH:-cpu}"
ABI_FLAGS=()
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/third_party/gotch"
GO="${GO:-go}"

log() { printf '[setup-gotch] %s\n' "$*" >&2; }
die() { printf '[setup-gotch] error: %s\n' "$*" >&2; exit 1; }

command -v "$GO" >/dev/null || die "go not found in PATH"
command -v g++ >/dev/null || die "g++ not found (apt-get install -y g++)"

# ---------------------------------------------------------------- libtorch ---
case "$MODE" in
cpu)
  if ! dpkg-query -W -f='${Status}' libtorch-dev 2>/dev/null | grep -q 'install ok installed'; then
    log "installing libtorch-dev (Debian, CPU)"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y libtorch-dev ||
      { $SUDO apt-get update && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y libtorch-dev; }
  fi
  MULTIARCH="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
  if [ "${CUALAKE_SKIP_OPENBLAS:-0}" != 1 ] &&
    readlink -f "/usr/lib/$MULTIARCH/libblas.so.3" 2>/dev/null | grep -q '/blas/libblas'; then
    log "system BLAS is the reference netlib BLAS; installing libopenblas0-openmp"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y libopenblas0-openmp ||
      log "warning: could not install OpenBLAS; training will be slower"
  fi
  TORCH_INC=(/usr/include /usr/include/torch/csrc/api/include)
  [ -f /usr/include/torch/csrc/api/include/torch/torch.h ] || die "libtorch headers not found under /usr/include/torch"
  TORCH_VER="$(dpkg-query -W -f='${Version}' libtorch-dev)"
  STUB_MSG="not available in libtorch ${TORCH_VER%%+*}"
  ;;
cuda)
  LIBTORCH="${LIBTORCH:-}"
  [ -n "$LIBTORCH" ] || die "CUALAKE_TORCH=cuda needs LIBTORCH=/path/to/libtorch (unzipped libtorch-cxx11-abi-shared-with-deps-2.0.1+cu118)"
  LIBTORCH="$(cd "$LIBTORCH" && pwd)"
  [ -f "$LIBTORCH/include/torch/csrc/api/include/torch/torch.h" ] || die "$LIBTORCH does not look like libtorch (include/torch/csrc/api/include/torch/torch.h missing)"
  [ -e "$LIBTORCH/lib/libtorch_cuda.so" ] || die "$LIBTORCH/lib/libtorch_cuda.so missing: not a CUDA build of libtorch"
  CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
  TORCH_INC=("$LIBTORCH/include" "$LIBTORCH/include/torch/csrc/api/include")
  [ -d "$CUDA_HOME/include" ] && TORCH_INC+=("$CUDA_HOME/include")
  # the libtorch zip has build-version; a pip-installed torch package (its
  # folder, torch/, holds include/ and lib/ too) has version.py instead
  TORCH_VER="$(cat "$LIBTORCH/build-version" 2>/dev/null ||
    sed -n "s/^__version__ = '\(.*\)'.*/\1/p" "$LIBTORCH/version.py" 2>/dev/null || true)"
  TORCH_VER="${TORCH_VER:-unknown}"
  # pytorch.org ships both ABIs; the pre-C++11 one has no __cxx11 symbols
  if ! nm -D --defined-only "$LIBTORCH/lib/libc10.so" 2>/dev/null | grep -q '__cxx11'; then
    ABI_FLAGS=(-D_GLIBCXX_USE_CXX11_ABI=0)
    log "libtorch uses the pre-C++11 ABI; compiling with -D_GLIBCXX_USE_CXX11_ABI=0"
  fi
  STUB_MSG="not available in libtorch ${TORCH_VER}"
  ;;
*) die "CUALAKE_TORCH must be cpu or cuda, got '$MODE'" ;;
esac
log "mode=$MODE libtorch=$TORCH_VER"

# ------------------------------------------------------------------ stamp ---
STAMP="$ROOT/third_party/gotch.stamp"
sha256() { if command -v sha256sum >/dev/null; then sha256sum | cut -d' ' -f1; else shasum -a 256 | cut -d' ' -f1; fi; }
# input_hash: everything the patch depends on besides the module source,
# which GOTCH_VERSION pins.
input_hash() {
  { cat "${BASH_SOURCE[0]}"; echo "$GOTCH_VERSION|$MODE|$TORCH_VER|${LIBTORCH:-}|${ABI_FLAGS[*]:-}|$("$GO" env GOVERSION)"; } | sha256
}
# output_hash: the patched tree (file names and contents) and go.work.
output_hash() {
  [ -d "$DEST" ] && [ -f "$ROOT/go.work" ] || { echo none; return; }
  { (cd "$DEST" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); cat "$ROOT/go.work"; } | sha256
}
INPUT_HASH="$(input_hash)"
if [ "${CUALAKE_FORCE_GOTCH:-0}" != 1 ] && [ -f "$STAMP" ] &&
  [ "$(sed -n 's/^input //p' "$STAMP")" = "$INPUT_HASH" ] &&
  [ "$(sed -n 's/^output //p' "$STAMP")" = "$(output_hash)" ]; then
  log "gotch already patched for libtorch $TORCH_VER (stamp $STAMP matches by hash); nothing to do"
  exit 0
fi
rm -f "$STAMP"

# ------------------------------------------------------------ gotch source ---
MODCACHE="$("$GO" env GOMODCACHE)"
SRC="$MODCACHE/github.com/sugarme/gotch@$GOTCH_VERSION"
if [ ! -f "$SRC/libtch/torch_api_generated.cpp.h" ]; then
  log "downloading gotch $GOTCH_VERSION"
  (cd "$ROOT" && GOWORK=off "$GO" mod download "github.com/sugarme/gotch@$GOTCH_VERSION")
fi
[ -f "$SRC/libtch/torch_api_generated.cpp.h" ] || die "gotch source not found at $SRC"

log "copying $SRC -> $DEST"
rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
cp -R "$SRC" "$DEST"
chmod -R u+w "$DEST" # the module cache is read-only

# ------------------------------------------------------------- cgo flags ---
LIBGO="$DEST/libtch/lib.go"
{
  echo "package libtch"
  echo
  echo "// Patched by scripts/setup-gotch.sh (mode=$MODE, libtorch $TORCH_VER)."
  echo "// No CUDA libraries unless mode=cuda; the C++ ABI is the compiler default"
  echo "// (C++11) unless libtorch is a pre-C++11-ABI build."
  echo
  echo "// #cgo CFLAGS: -I\${SRCDIR} -O3 -Wall -Wno-unused-variable -Wno-deprecated-declarations -Wno-c++11-narrowing -Wno-sign-compare -Wno-unused-function"
  echo "// #cgo CXXFLAGS: -std=c++17 -I\${SRCDIR} -O3 -Wno-unused-variable -Wno-deprecated-declarations"
  if [ "${#ABI_FLAGS[@]}" -gt 0 ]; then
    echo "// #cgo CXXFLAGS: ${ABI_FLAGS[*]}"
  fi
  for d in "${TORCH_INC[@]}"; do
    echo "// #cgo CXXFLAGS: -I$d"
  done
  if [ "$MODE" = cpu ]; then
    echo "// #cgo LDFLAGS: -ltorch -lc10 -ltorch_cpu"
  else
    # --no-as-needed: nothing references libtorch_cuda's symbols directly, and
    # without it the linker may drop it, making torch::cuda::is_available() false.
    echo "// #cgo LDFLAGS: -L$LIBTORCH/lib -Wl,-rpath,$LIBTORCH/lib -L$CUDA_HOME/lib64 -Wl,-rpath,$CUDA_HOME/lib64"
    echo "// #cgo LDFLAGS: -Wl,--no-as-needed -ltorch -lc10 -ltorch_cpu -ltorch_cuda -lc10_cuda -Wl,--as-needed"
  fi
  echo 'import "C"'
} >"$LIBGO"

# ------------------------------------------- stub ops libtorch lacks -------
GEN="$DEST/libtch/torch_api_generated.cpp.h"
INCFLAGS=()
for d in "${TORCH_INC[@]}"; do INCFLAGS+=("-I$d"); done

# stub_functions FILE NAME...: replace the statements inside PROTECT( ... ) of
# each named generated wrapper with a throw, keeping signature and the
# trailing return, so the C ABI that the Go side calls is unchanged.
stub_functions() {
  local file="$1"
  shift
  STUB_MSG="$STUB_MSG" perl -i -e '
    my %stub = map { $_ => 1 } @ARGV; @ARGV = ();
    my ($cur, $inprotect) = ("", 0);
    while (my $l = <STDIN>) {
      if ($l =~ /^\S.*\b(atg_\w+)\(.*\{\s*$/) { $cur = $1; $inprotect = 0; }
      if ($stub{$cur}) {
        if ($l =~ /^  PROTECT\(\s*$/) {
          print $l;
          print "    throw std::runtime_error(\"$cur: $ENV{STUB_MSG}\");\n";
          $inprotect = 1; next;
        }
        if ($inprotect) {
          if ($l =~ /^  \)\s*$/) { $inprotect = 0; print $l; }
          next;
        }
      }
      print $l;
    }
  ' "$@" <"$file" >"$file.tmp"
  mv "$file.tmp" "$file"
}

# failing_functions ERRFILE GENFILE: names of generated wrappers that the
# compiler rejected, from "In function 'atg_x(...)'" context lines and from
# error line numbers mapped back to their enclosing function.
failing_functions() {
  perl -e '
    my ($err, $gen) = @ARGV;
    open my $g, "<", $gen or die; my (@fn, $cur);
    while (my $l = <$g>) { $cur = $1 if $l =~ /^\S.*\b(atg_\w+)\(.*\{\s*$/; push @fn, $cur; }
    open my $e, "<", $err or die; my %out;
    while (my $l = <$e>) {
      $out{$1} = 1 if $l =~ /torch_api_generated\.cpp\.h: In function .*?\b(atg_\w+)\(/;
      if ($l =~ /torch_api_generated\.cpp\.h:(\d+):\d+:\s+(error|required from here)/) {
        my $f = $fn[$1 - 1]; $out{$f} = 1 if defined $f;
      }
    }
    print "$_\n" for sort keys %out;
  ' "$1" "$2"
}

ERR="$(mktemp)"
trap 'rm -f "$ERR"' EXIT
STUBBED=()
for round in 1 2 3 4 5 6 7 8; do
  log "compile check round $round (g++ -fsyntax-only, ~20 s)"
  if (cd "$DEST/libtch" && g++ -std=c++17 -fsyntax-only -fmax-errors=0 -w ${ABI_FLAGS[@]+"${ABI_FLAGS[@]}"} -I. "${INCFLAGS[@]}" torch_api.cpp) >"$ERR" 2>&1; then
    log "torch_api.cpp compiles; ${#STUBBED[@]} generated ops stubbed"
    break
  fi
  mapfile -t BAD < <(failing_functions "$ERR" "$GEN")
  if [ "${#BAD[@]}" -eq 0 ]; then
    grep -m 20 'error' "$ERR" >&2 || true
    die "torch_api.cpp fails to compile outside the generated wrappers; cannot stub automatically"
  fi
  log "stubbing ${#BAD[@]} ops: ${BAD[*]}"
  stub_functions "$GEN" "${BAD[@]}"
  STUBBED+=("${BAD[@]}")
  [ "$round" -lt 8 ] || die "still failing after $round rounds"
done
printf '%s\n' "${STUBBED[@]}" | sort -u >"$DEST/libtch/STUBBED_OPS.txt"

# ------------------------------------------------------- Go wrapper fixes ---
# gotch v0.8.0 bugs that bite at run time whatever the libtorch version:
#  a. every generated op allocates its output-pointer slot with C.malloc(0)
#     and never frees it (a leak per op call), and ops with more than three
#     outputs write past that allocation: allocate 64 bytes (8 pointers; the
#     most any op returns is 7) and free them when the wrapper returns.
#  b. results of C functions returning int are read as 8-byte Go ints through
#     unsafe casts of 4-byte C ints, so the upper half is stack garbage: in
#     particular GradSetEnabled reports a wrong previous state, and NoGrad then
#     leaves gradient recording switched off. Convert with int() instead.
perl -0pi -e 's{^([ \t]*)(\w+) := \(\*lib\.Ctensor\)\(unsafe\.Pointer\(C\.malloc\(0\)\)\)[ \t]*$}{$1$2 := (*lib.Ctensor)(unsafe.Pointer(C.malloc(64)))\n$1defer C.free(unsafe.Pointer($2))}mg' \
  "$DEST/ts/tensor-generated.go" "$DEST/ts/patch.go"
perl -pi -e 's{\*\(\*int\)\(unsafe\.Pointer\(&(cResult|cretVal)\)\)}{int($1)}g' \
  "$DEST/libtch/c-generated.go" "$DEST/libtch/tensor.go"
#  c. every tensor handle allocates a 100 KB Go array (bigStruct, "so the GC
#     feels the C memory") and asks libtorch for its size twice for a
#     statistic only printed in debug mode: per op that is 100 KB of zeroed
#     Go memory and two cgo calls, which made a one-token decode step of the
#     causal policy mostly garbage collection and page faults. The trainer
#     drops every tensor explicitly (trainer/internal/tx scopes), so the
#     handle allocates nothing extra and counts bytes in debug mode only.
perl -0pi -e 's{\n\tx\.d = new\(bigStruct\)\n}{\n}; s{\n\tnbytes := x\.nbytes\(\)\n\tatomic\.AddInt64\(&AllocatedMem, nbytes\)\n}{\n\tvar nbytes int64\n\tif gotch.Debug {\n\t\tnbytes = x.nbytes()\n\t\tatomic.AddInt64(&AllocatedMem, nbytes)\n\t}\n}' \
  "$DEST/ts/tensor.go"
#  d. a handle whose name is taken gets the name plus the tensor count, read
#     after the count's atomic increment and never checked again: two tensors
#     made at once on two threads (the trainer runs items on several) can
#     get one name. Dropping one deletes the name; dropping the other then
#     logs "Probably double free tensor" and never frees its C tensor. Suffix
#     the count this handle's own increment returned, unique per handle.
perl -0pi -e 's{\n\tatomic\.AddInt64\(&TensorCount, 1\)\n}{\n\tcount := atomic.AddInt64(&TensorCount, 1)\n}; s{name = fmt\.Sprintf\("%s_%09d", name, TensorCount\)\n(\t\}\n\tExistingTensors\[name\])}{name = fmt.Sprintf("%s_%09d", name, count)\n$1}' \
  "$DEST/ts/tensor.go"
#  e. every generated in-place op (RequiresGrad_, MulScalar_, ...) gets a
#     new handle to the same tensor from libtorch and overwrites the old one
#     without freeing it: the old handle's reference keeps the tensor alive
#     for good (a model's weights after Close, a leaf view and its gradient
#     per training item: megabytes per step). Free the old handle first.
perl -pi -e 's{^(\s*)ts\.ctensor = \*ptr\s*$}{$1lib.AtFree(ts.ctensor)\n$1ts.ctensor = *ptr\n}' "$DEST/ts/tensor-generated.go"
#  f. a Scalar's C memory is freed only by its finalizer, and the generated
#     ops pass its C pointer and keep no reference to the Go value: the GC
#     can free the scalar while libtorch still reads it (a warm start died
#     with "s.isIntegral(false) INTERNAL ASSERT FAILED" in MulScalar).
#     Keep every scalar argument alive until the C call returns.
perl -pi -e 'if (/^(\s*)lib\.Atg\w+\(.*\.cscalar/) { my $i = $1; my %seen; $_ .= join("", map { "${i}runtime.KeepAlive($_)\n" } grep { !$seen{$_}++ } /(\w+)\.cscalar/g) }' "$DEST/ts/tensor-generated.go"
perl -0pi -e 's{\nimport\(\n  "unsafe"\n}{\nimport(\n  "runtime"\n  "unsafe"\n}' "$DEST/ts/tensor-generated.go"
if grep -q 'C.malloc(0)))$' "$DEST/ts/tensor-generated.go" || [ "$(grep -c 'lib.AtFree(ts.ctensor)' "$DEST/ts/tensor-generated.go")" -lt 200 ] ||
  [ "$(grep -c 'runtime.KeepAlive(' "$DEST/ts/tensor-generated.go")" -lt 300 ] || ! grep -q '^  "runtime"$' "$DEST/ts/tensor-generated.go" || grep -q '(\*int)(unsafe.Pointer(&cretVal))' "$DEST/libtch/tensor.go" ||
  grep -q 'x.d = new(bigStruct)' "$DEST/ts/tensor.go" || ! grep -q 'name = fmt.Sprintf("%s_%09d", name, count)' "$DEST/ts/tensor.go"; then
  die "Go wrapper fixes did not apply"
fi
log "patched gotch's Go wrappers (output-slot leak, int result casts, 100 KB per tensor handle, names of tensors made at once, in-place ops' old handles, scalars freed during an op)"

# ------------------------------------------------------------------ go.work ---
cat >"$ROOT/go.work" <<'EOF'
go 1.26.8

use .

replace github.com/sugarme/gotch v0.8.0 => ./third_party/gotch
EOF
log "wrote $ROOT/go.work"

# ------------------------------------------------------------ warm-up build ---
if [ "${CUALAKE_SKIP_BUILD:-0}" != 1 ]; then
  log "building gotch (the first cgo build of libtch takes ~2-3 minutes)"
  start=$(date +%s)
  (cd "$ROOT" && "$GO" build github.com/sugarme/gotch/ts github.com/sugarme/gotch/nn)
  log "gotch built in $(($(date +%s) - start)) s"
  # link and run a tiny program: catches symbols missing from this libtorch
  # and libraries the loader cannot find, which compiling alone does not
  SMOKE="$ROOT/third_party/_smoke" # "_": not matched by ./... patterns
  mkdir -p "$SMOKE"
  cat >"$SMOKE/main.go" <<'EOF'
// Command _smoke checks that gotch links and runs against libtorch.
package main

import (
	"fmt"
	"os"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

func main() {
	x, err := ts.OfSlice([]float32{1, 2, 3, 4})
	if err == nil {
		x, err = x.Reshape([]int64{2, 2}, true)
	}
	var y *ts.Tensor
	if err == nil {
		y, err = x.Matmul(x, false)
	}
	var v float64
	if err == nil {
		v, err = y.Float64Value([]int64{1, 1})
	}
	if err != nil || v != 22 {
		fmt.Fprintln(os.Stderr, "gotch smoke test failed:", err, v)
		os.Exit(1)
	}
	fmt.Println("gotch ok; cuda available:", gotch.CudaIfAvailable().IsCuda())
}
EOF
  (cd "$ROOT" && "$GO" run ./third_party/_smoke) || die "gotch smoke program failed"
fi
printf 'input %s\noutput %s\n' "$INPUT_HASH" "$(output_hash)" >"$STAMP"
log "wrote $STAMP"
log "done"
