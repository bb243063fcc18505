// Package tx wraps the gotch tensor operations the trainer needs so that they
// can be chained without panics: a Scope records the first error (later
// operations become no-ops) and owns every tensor it creates, dropping them
// when it is closed.
//
// gotch's Must* functions call log.Fatal, which cannot be recovered, so this
// package only calls the error-returning variants.
package tx

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/sugarme/gotch"
	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"
)

// Scope tracks the tensors created by one computation and its first error.
// It is not safe for concurrent use.
type Scope struct {
	err  error
	made []*ts.Tensor
	kept map[*ts.Tensor]bool
}

// NewScope returns an empty scope.
func NewScope() *Scope { return &Scope{} }

// Err returns the first error recorded by the scope.
func (s *Scope) Err() error { return s.err }

// Fail records err (wrapped with op) unless an error is already recorded.
func (s *Scope) Fail(op string, err error) {
	if s.err == nil && err != nil {
		s.err = fmt.Errorf("%s: %w", op, clean(err))
	}
}

// Keep marks t as owned by the caller so Close does not drop it.
func (s *Scope) Keep(t *ts.Tensor) *ts.Tensor {
	if t == nil {
		return nil
	}
	if s.kept == nil {
		s.kept = map[*ts.Tensor]bool{}
	}
	s.kept[t] = true
	return t
}

// Close drops every tensor the scope created except the kept ones. Dropping
// only releases this handle: autograd keeps its own references.
func (s *Scope) Close() {
	for _, t := range s.made {
		if t != nil && !s.kept[t] {
			_ = t.Drop()
		}
	}
	s.made = nil
}

// Track adopts a tensor created outside the scope's helpers.
func (s *Scope) Track(op string, t *ts.Tensor, err error) *ts.Tensor {
	if err != nil {
		s.Fail(op, err)
		if t != nil {
			_ = t.Drop()
		}
		return nil
	}
	if s.err != nil {
		if t != nil {
			_ = t.Drop()
		}
		return nil
	}
	s.made = append(s.made, t)
	return t
}

// ok reports whether the scope may run another operation.
func (s *Scope) ok(xs ...*ts.Tensor) bool {
	if s.err != nil {
		return false
	}
	for _, x := range xs {
		if x == nil {
			s.err = errors.New("tx: nil tensor operand")
			return false
		}
	}
	return true
}

// clean drops the Go stack trace that gotch appends to libtorch errors.
func clean(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "\n"); i >= 0 {
		return errors.New(strings.TrimSpace(msg[:i]))
	}
	return err
}

// Recover converts a panic inside a gotch call into an error stored in *err.
// Use as `defer tx.Recover(&err, "what")` at API boundaries.
func Recover(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: torch panic: %v", what, r)
	}
}

// Lock pins the calling goroutine to its OS thread and returns the unlock
// function. libtorch keeps its last error and its grad mode in thread-local
// storage, so a goroutine must not migrate between a call and its error check.
func Lock() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// ---------------------------------------------------------------- creation --

// Int64s makes an int64 tensor of the given shape on dev.
func (s *Scope) Int64s(data []int64, shape []int64, dev gotch.Device) *ts.Tensor {
	if !s.ok() {
		return nil
	}
	if err := checkLen(len(data), shape); err != nil {
		s.Fail("int64s", err)
		return nil
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(data))), len(data)*8)
	t, err := ts.OfDataSize(b, shape, gotch.Int64)
	return s.toDevice("int64s", s.Track("int64s", t, err), dev)
}

// Float32s makes a float32 tensor of the given shape on dev.
func (s *Scope) Float32s(data []float32, shape []int64, dev gotch.Device) *ts.Tensor {
	if !s.ok() {
		return nil
	}
	if err := checkLen(len(data), shape); err != nil {
		s.Fail("float32s", err)
		return nil
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(data))), len(data)*4)
	t, err := ts.OfDataSize(b, shape, gotch.Float)
	return s.toDevice("float32s", s.Track("float32s", t, err), dev)
}

// NewFloat32 makes an untracked float32 tensor (for parameters and other
// long-lived tensors the caller owns).
func NewFloat32(data []float32, shape []int64, dev gotch.Device) (*ts.Tensor, error) {
	s := NewScope()
	defer s.Close()
	t := s.Keep(s.Float32s(data, shape, dev))
	return t, s.Err()
}

func (s *Scope) toDevice(op string, t *ts.Tensor, dev gotch.Device) *ts.Tensor {
	if t == nil || dev == gotch.CPU || !dev.IsCuda() {
		return t
	}
	r, err := t.To(dev, false)
	return s.Track(op+": to device", r, err)
}

func checkLen(n int, shape []int64) error {
	want := int64(1)
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("negative dimension in shape %v", shape)
		}
		want *= d
	}
	if int64(n) != want {
		return fmt.Errorf("%d values do not fill shape %v", n, shape)
	}
	return nil
}

// ------------------------------------------------------------- read-back --

// ReadFloat32 copies a tensor (any float dtype, any device) into Go memory.
func ReadFloat32(t *ts.Tensor) ([]float32, error) {
	s := NewScope()
	defer s.Close()
	c := s.Contiguous(s.Totype(s.To(t, gotch.CPU), gotch.Float))
	if s.err != nil {
		return nil, s.err
	}
	n, err := numel(c)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	if n > 0 {
		lib.AtCopyData(lib.Ctensor(c.Ctensor()), unsafe.Pointer(&out[0]), uint(n), 4)
		if err := ts.TorchErr(); err != nil {
			return nil, fmt.Errorf("copy data: %w", clean(err))
		}
	}
	return out, nil
}

// ReadInt64 copies an integer tensor into Go memory.
func ReadInt64(t *ts.Tensor) ([]int64, error) {
	s := NewScope()
	defer s.Close()
	c := s.Contiguous(s.Totype(s.To(t, gotch.CPU), gotch.Int64))
	if s.err != nil {
		return nil, s.err
	}
	n, err := numel(c)
	if err != nil {
		return nil, err
	}
	out := make([]int64, n)
	if n > 0 {
		lib.AtCopyData(lib.Ctensor(c.Ctensor()), unsafe.Pointer(&out[0]), uint(n), 8)
		if err := ts.TorchErr(); err != nil {
			return nil, fmt.Errorf("copy data: %w", clean(err))
		}
	}
	return out, nil
}

// Scalar reads a one-element tensor as float64.
func Scalar(t *ts.Tensor) (float64, error) {
	v, err := ReadFloat32(t)
	if err != nil {
		return 0, err
	}
	if len(v) != 1 {
		return 0, fmt.Errorf("scalar: tensor has %d elements", len(v))
	}
	return float64(v[0]), nil
}

func numel(t *ts.Tensor) (int, error) {
	shape, err := t.Size()
	if err != nil {
		return 0, clean(err)
	}
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	return n, nil
}

// Shape returns the tensor's shape, recording an error on failure.
func (s *Scope) Shape(t *ts.Tensor) []int64 {
	if !s.ok(t) {
		return nil
	}
	sh, err := t.Size()
	if err != nil {
		s.Fail("size", err)
		return nil
	}
	return sh
}

// -------------------------------------------------------------- operations --

// The methods below mirror libtorch operations; each is a no-op returning nil
// once the scope holds an error.

func (s *Scope) un(op string, x *ts.Tensor, f func() (*ts.Tensor, error)) *ts.Tensor {
	if !s.ok(x) {
		return nil
	}
	r, err := f()
	return s.Track(op, r, err)
}

func (s *Scope) bin(op string, a, b *ts.Tensor, f func() (*ts.Tensor, error)) *ts.Tensor {
	if !s.ok(a, b) {
		return nil
	}
	r, err := f()
	return s.Track(op, r, err)
}

// Add returns a + b (broadcasting).
func (s *Scope) Add(a, b *ts.Tensor) *ts.Tensor {
	return s.bin("add", a, b, func() (*ts.Tensor, error) { return a.Add(b, false) })
}

// Sub returns a - b.
func (s *Scope) Sub(a, b *ts.Tensor) *ts.Tensor {
	return s.bin("sub", a, b, func() (*ts.Tensor, error) { return a.Sub(b, false) })
}

// Mul returns a * b.
func (s *Scope) Mul(a, b *ts.Tensor) *ts.Tensor {
	return s.bin("mul", a, b, func() (*ts.Tensor, error) { return a.Mul(b, false) })
}

// Div returns a / b.
func (s *Scope) Div(a, b *ts.Tensor) *ts.Tensor {
	return s.bin("div", a, b, func() (*ts.Tensor, error) { return a.Div(b, false) })
}

// Minimum returns the elementwise minimum.
func (s *Scope) Minimum(a, b *ts.Tensor) *ts.Tensor {
	return s.bin("minimum", a, b, func() (*ts.Tensor, error) { return a.Minimum(b, false) })
}

// Matmul returns the (batched) matrix product.
func (s *Scope) Matmul(a, b *ts.Tensor) *ts.Tensor {
	return s.bin("matmul", a, b, func() (*ts.Tensor, error) { return a.Matmul(b, false) })
}

// AddScalar returns x + v.
func (s *Scope) AddScalar(x *ts.Tensor, v float64) *ts.Tensor {
	return s.un("add scalar", x, func() (*ts.Tensor, error) { return x.AddScalar(ts.FloatScalar(v), false) })
}

// MulScalar returns x * v.
func (s *Scope) MulScalar(x *ts.Tensor, v float64) *ts.Tensor {
	return s.un("mul scalar", x, func() (*ts.Tensor, error) { return x.MulScalar(ts.FloatScalar(v), false) })
}

// RSubScalar returns v - x.
func (s *Scope) RSubScalar(v float64, x *ts.Tensor) *ts.Tensor {
	return s.AddScalar(s.MulScalar(x, -1), v)
}

// Clamp limits x to [lo, hi].
func (s *Scope) Clamp(x *ts.Tensor, lo, hi float64) *ts.Tensor {
	return s.un("clamp", x, func() (*ts.Tensor, error) { return x.Clamp(ts.FloatScalar(lo), ts.FloatScalar(hi), false) })
}

// ClampMax limits x to at most hi.
func (s *Scope) ClampMax(x *ts.Tensor, hi float64) *ts.Tensor {
	return s.un("clamp max", x, func() (*ts.Tensor, error) { return x.ClampMax(ts.FloatScalar(hi), false) })
}

// ClampMin limits x to at least lo.
func (s *Scope) ClampMin(x *ts.Tensor, lo float64) *ts.Tensor {
	return s.un("clamp min", x, func() (*ts.Tensor, error) { return x.ClampMin(ts.FloatScalar(lo), false) })
}

// Log returns the natural logarithm of x.
func (s *Scope) Log(x *ts.Tensor) *ts.Tensor {
	return s.un("log", x, func() (*ts.Tensor, error) { return x.Log(false) })
}

// Sigmoid returns 1/(1+e^-x).
func (s *Scope) Sigmoid(x *ts.Tensor) *ts.Tensor {
	return s.un("sigmoid", x, func() (*ts.Tensor, error) { return x.Sigmoid(false) })
}

// Exp returns e^x.
func (s *Scope) Exp(x *ts.Tensor) *ts.Tensor {
	return s.un("exp", x, func() (*ts.Tensor, error) { return x.Exp(false) })
}

// Tanh returns tanh(x).
func (s *Scope) Tanh(x *ts.Tensor) *ts.Tensor {
	return s.un("tanh", x, func() (*ts.Tensor, error) { return x.Tanh(false) })
}

// Gelu returns the exact (erf) GELU of x.
func (s *Scope) Gelu(x *ts.Tensor) *ts.Tensor {
	return s.un("gelu", x, func() (*ts.Tensor, error) { return x.Gelu("none", false) })
}

// Square returns x*x.
func (s *Scope) Square(x *ts.Tensor) *ts.Tensor {
	return s.un("square", x, func() (*ts.Tensor, error) { return x.Square(false) })
}

// Detach returns x without autograd history.
func (s *Scope) Detach(x *ts.Tensor) *ts.Tensor {
	return s.un("detach", x, func() (*ts.Tensor, error) { return x.Detach(false) })
}

// Contiguous returns a contiguous copy (or x itself, as a new handle).
func (s *Scope) Contiguous(x *ts.Tensor) *ts.Tensor {
	return s.un("contiguous", x, func() (*ts.Tensor, error) { return x.Contiguous(false) })
}

// To moves x to dev.
func (s *Scope) To(x *ts.Tensor, dev gotch.Device) *ts.Tensor {
	return s.un("to device", x, func() (*ts.Tensor, error) { return x.To(dev, false) })
}

// Totype converts x to dtype.
func (s *Scope) Totype(x *ts.Tensor, dt gotch.DType) *ts.Tensor {
	return s.un("totype", x, func() (*ts.Tensor, error) { return x.Totype(dt, false) })
}

// GtScalar returns x > v as a bool tensor.
func (s *Scope) GtScalar(x *ts.Tensor, v float64) *ts.Tensor {
	return s.un("gt", x, func() (*ts.Tensor, error) { return x.Gt(ts.FloatScalar(v), false) })
}

// LtScalar returns x < v as a bool tensor.
func (s *Scope) LtScalar(x *ts.Tensor, v float64) *ts.Tensor {
	return s.un("lt", x, func() (*ts.Tensor, error) { return x.Lt(ts.FloatScalar(v), false) })
}

// And returns the logical and of two bool tensors.
func (s *Scope) And(a, b *ts.Tensor) *ts.Tensor {
	return s.bin("logical and", a, b, func() (*ts.Tensor, error) { return a.LogicalAnd(b, false) })
}

// Float returns x as float32 (e.g. a bool mask as 0/1).
func (s *Scope) Float(x *ts.Tensor) *ts.Tensor { return s.Totype(x, gotch.Float) }

// Sum returns the sum of all elements (0-dim).
func (s *Scope) Sum(x *ts.Tensor) *ts.Tensor {
	return s.un("sum", x, func() (*ts.Tensor, error) { return x.Sum(gotch.Float, false) })
}

// SumDim sums over dim.
func (s *Scope) SumDim(x *ts.Tensor, dim int64, keep bool) *ts.Tensor {
	return s.un("sum dim", x, func() (*ts.Tensor, error) { return x.SumDimIntlist([]int64{dim}, keep, gotch.Float, false) })
}

// Softmax over dim.
func (s *Scope) Softmax(x *ts.Tensor, dim int64) *ts.Tensor {
	return s.un("softmax", x, func() (*ts.Tensor, error) { return x.Softmax(dim, gotch.Float, false) })
}

// LogSoftmax over dim.
func (s *Scope) LogSoftmax(x *ts.Tensor, dim int64) *ts.Tensor {
	return s.un("log softmax", x, func() (*ts.Tensor, error) { return x.LogSoftmax(dim, gotch.Float, false) })
}

// Gather picks x[..., idx] along dim.
func (s *Scope) Gather(x *ts.Tensor, dim int64, idx *ts.Tensor) *ts.Tensor {
	return s.bin("gather", x, idx, func() (*ts.Tensor, error) { return x.Gather(dim, idx, false, false) })
}

// Reshape returns x with a new shape.
func (s *Scope) Reshape(x *ts.Tensor, shape ...int64) *ts.Tensor {
	return s.un("reshape", x, func() (*ts.Tensor, error) { return x.Reshape(shape, false) })
}

// Transpose swaps two dims.
func (s *Scope) Transpose(x *ts.Tensor, a, b int64) *ts.Tensor {
	return s.un("transpose", x, func() (*ts.Tensor, error) { return x.Transpose(a, b, false) })
}

// Permute reorders dims.
func (s *Scope) Permute(x *ts.Tensor, dims ...int64) *ts.Tensor {
	return s.un("permute", x, func() (*ts.Tensor, error) { return x.Permute(dims, false) })
}

// Select indexes dim at i, removing the dim.
func (s *Scope) Select(x *ts.Tensor, dim, i int64) *ts.Tensor {
	return s.un("select", x, func() (*ts.Tensor, error) { return x.Select(dim, i, false) })
}

// Narrow takes n entries of dim starting at start.
func (s *Scope) Narrow(x *ts.Tensor, dim, start, n int64) *ts.Tensor {
	return s.un("narrow", x, func() (*ts.Tensor, error) { return x.Narrow(dim, start, n, false) })
}

// Unsqueeze inserts a dim of size 1.
func (s *Scope) Unsqueeze(x *ts.Tensor, dim int64) *ts.Tensor {
	return s.un("unsqueeze", x, func() (*ts.Tensor, error) { return x.Unsqueeze(dim, false) })
}

// Squeeze removes dim (of size 1).
func (s *Scope) Squeeze(x *ts.Tensor, dim int64) *ts.Tensor {
	return s.un("squeeze", x, func() (*ts.Tensor, error) { return x.SqueezeDim(dim, false) })
}

// Where returns cond ? a : b.
func (s *Scope) Where(cond, a, b *ts.Tensor) *ts.Tensor {
	if !s.ok(cond, a, b) {
		return nil
	}
	r, err := a.WhereSelf(cond, b, false)
	return s.Track("where", r, err)
}

// Stack stacks tensors along a new dim.
func (s *Scope) Stack(xs []*ts.Tensor, dim int64) *ts.Tensor {
	if !s.ok(xs...) {
		return nil
	}
	r, err := ts.Stack(xs, dim)
	return s.Track("stack", r, err)
}

// Cat concatenates tensors along dim.
func (s *Scope) Cat(xs []*ts.Tensor, dim int64) *ts.Tensor {
	if !s.ok(xs...) {
		return nil
	}
	r, err := ts.Cat(xs, dim)
	return s.Track("cat", r, err)
}

// Embedding looks up rows of w.
func (s *Scope) Embedding(w, ids *ts.Tensor) *ts.Tensor {
	return s.bin("embedding", w, ids, func() (*ts.Tensor, error) { return ts.Embedding(w, ids, -1, false, false) })
}

// Linear returns x·wᵀ + b (b may be nil).
func (s *Scope) Linear(x, w, b *ts.Tensor) *ts.Tensor {
	if !s.ok(x, w) {
		return nil
	}
	if b == nil {
		b = ts.None
	}
	r, err := ts.Linear(x, w, b)
	return s.Track("linear", r, err)
}

// LayerNorm normalises the last dim.
func (s *Scope) LayerNorm(x, w, b *ts.Tensor, dim int64) *ts.Tensor {
	if !s.ok(x, w, b) {
		return nil
	}
	r, err := ts.LayerNorm(x, []int64{dim}, w, b, 1e-5, false)
	return s.Track("layer norm", r, err)
}

// GRUCell runs one GRU step.
func (s *Scope) GRUCell(x, h, wih, whh, bih, bhh *ts.Tensor) *ts.Tensor {
	if !s.ok(x, h, wih, whh, bih, bhh) {
		return nil
	}
	r, err := ts.GruCell(x, h, wih, whh, bih, bhh)
	return s.Track("gru cell", r, err)
}

// Zeros makes a float32 zero tensor.
func (s *Scope) Zeros(shape []int64, dev gotch.Device) *ts.Tensor {
	if !s.ok() {
		return nil
	}
	r, err := ts.Zeros(shape, gotch.Float, dev)
	return s.Track("zeros", r, err)
}

// CopyInto copies src into dst in place (same shape; dst may be a view, so
// this writes into the tensor it views).
func (s *Scope) CopyInto(dst, src *ts.Tensor) {
	if !s.ok(dst, src) {
		return
	}
	lib.AtCopy_(lib.Ctensor(dst.Ctensor()), lib.Ctensor(src.Ctensor()))
	if err := ts.TorchErr(); err != nil {
		s.Fail("copy", err)
	}
}

// Backward runs autograd from a scalar loss.
func (s *Scope) Backward(loss *ts.Tensor) {
	if !s.ok(loss) {
		return
	}
	s.Fail("backward", loss.Backward())
}

// NoGrad runs f with gradient recording off (thread-local in libtorch; the
// caller must hold the OS thread, see Lock).
func NoGrad(f func() error) error {
	prev, err := setGrad(false)
	if err != nil {
		return fmt.Errorf("disable grad: %w", err)
	}
	defer func() { _, _ = setGrad(prev) }()
	return f()
}

// NegInf is the additive mask value for excluded attention keys; finite so
// that a fully masked row cannot produce NaN.
const NegInf = -1e9

// TokenLogProbs returns the log-probabilities of actions[b][k] under the
// temperature-scaled next-token distribution given logits [B, L, V]: [B, L],
// 0 beyond an action's length.
func (s *Scope) TokenLogProbs(logits *ts.Tensor, actions [][]int32, temperature float64, dev gotch.Device) *ts.Tensor {
	return s.PickActions(s.LogSoftmaxT(logits, temperature), actions, dev)
}

// LogSoftmaxT returns log_softmax(logits / temperature) over the last dim.
func (s *Scope) LogSoftmaxT(logits *ts.Tensor, temperature float64) *ts.Tensor {
	if !(temperature > 0) {
		s.Fail("log softmax", fmt.Errorf("temperature %v must be positive", temperature))
		return nil
	}
	if temperature != 1 {
		logits = s.MulScalar(logits, 1/temperature)
	}
	return s.LogSoftmax(logits, -1)
}

// PickActions gathers lp[b, k, actions[b][k]] from log-probabilities
// [B, L, V] into [B, L], 0 beyond an action's length.
func (s *Scope) PickActions(lp *ts.Tensor, actions [][]int32, dev gotch.Device) *ts.Tensor {
	sh := s.Shape(lp)
	if s.err != nil {
		return nil
	}
	if len(sh) != 3 || int(sh[0]) != len(actions) {
		s.Fail("pick actions", fmt.Errorf("log-probs shape %v does not match %d actions", sh, len(actions)))
		return nil
	}
	B, L := sh[0], sh[1]
	tgt := make([]int64, B*L)
	mask := make([]float32, B*L)
	for i, a := range actions {
		if int64(len(a)) > L {
			s.Fail("pick actions", fmt.Errorf("action %d has %d tokens, log-probs cover %d", i, len(a), L))
			return nil
		}
		for k, id := range a {
			tgt[int64(i)*L+int64(k)] = int64(id)
			mask[int64(i)*L+int64(k)] = 1
		}
	}
	idx := s.Int64s(tgt, []int64{B, L, 1}, dev)
	picked := s.Squeeze(s.Gather(lp, 2, idx), 2)
	return s.Mul(picked, s.Float32s(mask, []int64{B, L}, dev))
}

// Triu keeps the elements on and above the diagonal-th diagonal of the last
// two dims (j - i >= diagonal) and zeroes the rest.
func (s *Scope) Triu(x *ts.Tensor, diagonal int64) *ts.Tensor {
	return s.un("triu", x, func() (*ts.Tensor, error) { return x.Triu(diagonal, false) })
}

// Ones makes a float32 tensor of ones.
func (s *Scope) Ones(shape []int64, dev gotch.Device) *ts.Tensor {
	if !s.ok() {
		return nil
	}
	r, err := ts.Ones(shape, gotch.Float, dev)
	return s.Track("ones", r, err)
}

// IndexSelect picks the entries idx (int64) of x along dim.
func (s *Scope) IndexSelect(x *ts.Tensor, dim int64, idx *ts.Tensor) *ts.Tensor {
	return s.bin("index select", x, idx, func() (*ts.Tensor, error) { return x.IndexSelect(dim, idx, false) })
}

// IndexCopy returns x with its entries idx along dim replaced by the rows of
// src (differentiable in both).
func (s *Scope) IndexCopy(x *ts.Tensor, dim int64, idx, src *ts.Tensor) *ts.Tensor {
	if !s.ok(x, idx, src) {
		return nil
	}
	r, err := x.IndexCopy(dim, idx, src, false)
	return s.Track("index copy", r, err)
}

// Argmax returns the index of the largest entry along dim.
func (s *Scope) Argmax(x *ts.Tensor, dim int64) *ts.Tensor {
	return s.un("argmax", x, func() (*ts.Tensor, error) { return x.Argmax([]int64{dim}, false, false) })
}
