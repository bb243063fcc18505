package trainer

import (
	"testing"

	"github.com/sugarme/gotch"
)

func TestDevice(t *testing.T) {
	if d, err := Device("cpu"); err != nil || d.IsCuda() {
		t.Errorf("cpu: %v %v", d, err)
	}
	if _, err := Device("tpu"); err == nil {
		t.Error("unknown device accepted")
	}
	d, err := Device("cuda")
	if gotch.CudaIfAvailable().IsCuda() {
		if err != nil || !d.IsCuda() {
			t.Errorf("cuda available but Device(cuda) = %v, %v", d, err)
		}
	} else if err == nil {
		t.Error("cuda without a GPU: want ErrNoCUDA")
	}
}
