package benchreport

import (
	"bytes"
	"image/png"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
)

// syntheticFlood is what a correct limiter admits when one identity offers 100/s
// against capacity 50 refilled at 10/s, in half-second bins.
func syntheticFlood() Flood {
	plan := FloodPlan{Rule: bucketgate.Rule{Name: "burst", Capacity: 50, RefillPerSecond: 10}, Offered: 100, Duration: 10 * time.Second, Bin: time.Second / 2}
	f := Flood{Plan: plan}
	for i := range 20 {
		b := FloodBin{Start: time.Duration(i) * plan.Bin, Offered: 50, Admitted: 5}
		if i == 0 {
			b.Admitted = 50
		}
		f.Bins = append(f.Bins, b)
	}
	return f
}

func TestPlotFlood(t *testing.T) {
	var buf bytes.Buffer
	if err := PlotFlood(&buf, syntheticFlood()); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != plotWidth || b.Dy() != plotHeight {
		t.Errorf("size %v, want %dx%d", b, plotWidth, plotHeight)
	}
	// In the middle of the flood both lines cross the column, admitted (10/s) below
	// offered (100/s): lower on the image means a larger y.
	offeredY, admittedY := -1, -1
	x := (plotLeft + plotRight) / 2
	for y := plotTop; y <= plotBottom; y++ {
		switch img.At(x, y) {
		case colorOffered:
			offeredY = y
		case colorAdmitted:
			admittedY = y
		}
	}
	if offeredY < 0 || admittedY < 0 || admittedY <= offeredY {
		t.Errorf("column %d: offered at y=%d, admitted at y=%d; want both, admitted below", x, offeredY, admittedY)
	}
	if err := PlotFlood(&buf, Flood{}); err == nil {
		t.Error("plotting an empty flood: want an error")
	}
}
