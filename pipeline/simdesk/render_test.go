package simdesk

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk/action"
)

// Screenshots decode as PNGs of the screen size, with the rendered pixels.
func TestScreenshotIsValidPNG(t *testing.T) {
	for _, size := range [][2]int{{1280, 800}, {1921, 1081}} {
		d, err := New(size[0], size[1], 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range Apps() {
			d.openApp(a)
		}
		b, err := d.Screenshot()
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%v: decode: %v", size, err)
		}
		if img.Bounds() != image.Rect(0, 0, size[0], size[1]) {
			t.Fatalf("bounds %v, want %v", img.Bounds(), size)
		}
		frame := d.Image()
		for y := 0; y < size[1]; y += 7 {
			for x := 0; x < size[0]; x += 5 {
				r1, g1, b1, _ := img.At(x, y).RGBA()
				r2, g2, b2, _ := palette[frame.ColorIndexAt(x, y)].RGBA()
				if r1 != r2 || g1 != g2 || b1 != b2 {
					t.Fatalf("pixel %d,%d differs after decoding", x, y)
				}
			}
		}
	}
}

// Identical states render identical bytes; different states differ.
func TestScreenshotDeterministic(t *testing.T) {
	shoot := func(seed int64, acts ...string) []byte {
		d, err := New(1280, 800, seed)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range acts {
			a, err := action.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			d.Apply(a)
		}
		b, err := d.Screenshot()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	steps := []string{"click 47 20", "double_click 436 233", "click 230 20"}
	a, b := shoot(9, steps...), shoot(9, steps...)
	if !bytes.Equal(a, b) {
		t.Fatal("same actions from the same seed rendered different bytes")
	}
	if bytes.Equal(a, shoot(9, steps[:2]...)) {
		t.Fatal("different states rendered the same bytes")
	}
	// Rendering twice from one state is stable too, and restoring a state
	// renders what the original rendered.
	d, _ := New(1280, 800, 9)
	for _, s := range steps {
		x, _ := action.Parse(s)
		d.Apply(x)
	}
	one, _ := d.Screenshot()
	two, _ := d.Screenshot()
	if !bytes.Equal(one, two) || !bytes.Equal(one, a) {
		t.Fatal("rendering is not a pure function of state")
	}
	st, err := d.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	e, _ := New(1280, 800, 1)
	if err := e.RestoreState(st); err != nil {
		t.Fatal(err)
	}
	three, _ := e.Screenshot()
	if !bytes.Equal(one, three) {
		t.Fatal("restored state renders differently")
	}
}

func TestPack4(t *testing.T) {
	for n := 0; n < 40; n++ {
		pix := make([]byte, n)
		for i := range pix {
			pix[i] = byte((i*7 + n) % 16)
		}
		got := make([]byte, (n+1)/2)
		pack4(got, pix)
		for i := 0; i < n; i++ {
			nib := got[i/2] >> 4
			if i%2 == 1 {
				nib = got[i/2] & 15
			}
			if nib != pix[i] {
				t.Fatalf("n=%d: pixel %d packed as %d, want %d", n, i, nib, pix[i])
			}
		}
		if n%2 == 1 && got[n/2]&15 != 0 {
			t.Fatalf("n=%d: padding nibble not zero", n)
		}
	}
}
