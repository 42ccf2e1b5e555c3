package benchreport

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strconv"
)

// Plot geometry, in image pixels.
const (
	plotWidth     = 900
	plotHeight    = 500
	plotLeft      = 80 // the y axis
	plotRight     = plotWidth - 30
	plotTop       = 60
	plotBottom    = plotHeight - 60 // the x axis
	textScale     = 2               // image pixels per font pixel
	lineThickness = 3
	tickLength    = 6
	yTickTarget   = 6 // about this many labelled y ticks
)

var (
	colorBackground = color.RGBA{255, 255, 255, 255}
	colorAxis       = color.RGBA{40, 40, 40, 255}
	colorGrid       = color.RGBA{225, 225, 225, 255}
	colorOffered    = color.RGBA{230, 120, 30, 255}
	colorAdmitted   = color.RGBA{30, 90, 200, 255}
)

// PlotFlood draws f as a PNG: requests per second offered and admitted in each bin,
// against time, as step lines.
func PlotFlood(w io.Writer, f Flood) error {
	if len(f.Bins) == 0 {
		return fmt.Errorf("plot: flood has no bins")
	}
	binSec := f.Plan.Bin.Seconds()
	offered := make([]float64, len(f.Bins))
	admitted := make([]float64, len(f.Bins))
	top := 0.0
	for i, b := range f.Bins {
		offered[i], admitted[i] = float64(b.Offered)/binSec, float64(b.Admitted)/binSec
		top = math.Max(top, math.Max(offered[i], admitted[i]))
	}
	step := niceStep(top / yTickTarget)
	yMax := math.Ceil(top*1.05/step) * step
	xMax := float64(len(f.Bins)) * binSec

	img := image.NewRGBA(image.Rect(0, 0, plotWidth, plotHeight))
	draw.Draw(img, img.Bounds(), image.NewUniform(colorBackground), image.Point{}, draw.Src)
	px := func(sec float64) int { return plotLeft + int(math.Round(sec/xMax*float64(plotRight-plotLeft))) }
	py := func(rate float64) int { return plotBottom - int(math.Round(rate/yMax*float64(plotBottom-plotTop))) }

	for v := 0.0; v <= yMax+step/2; v += step {
		y := py(v)
		drawLine(img, plotLeft, y, plotRight, y, 1, colorGrid)
		drawLine(img, plotLeft-tickLength, y, plotLeft, y, 1, colorAxis)
		label := strconv.FormatFloat(v, 'f', -1, 64)
		drawText(img, plotLeft-tickLength-4-textWidth(label), y-textHeight()/2, label, colorAxis)
	}
	for s := 0; float64(s) <= xMax; s++ {
		x := px(float64(s))
		drawLine(img, x, plotBottom, x, plotBottom+tickLength, 1, colorAxis)
		label := strconv.Itoa(s)
		drawText(img, x-textWidth(label)/2, plotBottom+tickLength+4, label, colorAxis)
	}
	drawLine(img, plotLeft, plotTop, plotLeft, plotBottom, 1, colorAxis)
	drawLine(img, plotLeft, plotBottom, plotRight, plotBottom, 1, colorAxis)

	drawSteps(img, offered, binSec, px, py, colorOffered)
	drawSteps(img, admitted, binSec, px, py, colorAdmitted)

	title := fmt.Sprintf("one identity flooding at %s/s: capacity %d, refill %s/s",
		strconv.FormatFloat(f.Plan.Offered, 'f', -1, 64), f.Plan.Rule.Capacity, strconv.FormatFloat(f.Plan.Rule.RefillPerSecond, 'f', -1, 64))
	drawText(img, plotLeft, 14, title, colorAxis)
	drawText(img, plotLeft, plotTop-textHeight()-8, "requests per second", colorAxis)
	xLabel := "time (s)"
	drawText(img, (plotLeft+plotRight-textWidth(xLabel))/2, plotHeight-textHeight()-6, xLabel, colorAxis)
	legendX := plotRight - textWidth("admitted") - 40
	for i, l := range []struct {
		name string
		c    color.RGBA
	}{{"offered", colorOffered}, {"admitted", colorAdmitted}} {
		y := plotTop + 12 + i*(textHeight()+8)
		drawLine(img, legendX, y+textHeight()/2, legendX+28, y+textHeight()/2, lineThickness, l.c)
		drawText(img, legendX+36, y, l.name, colorAxis)
	}
	if err := png.Encode(w, img); err != nil {
		return fmt.Errorf("plot: encode png: %w", err)
	}
	return nil
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten (at least 1).
func niceStep(raw float64) float64 {
	if raw <= 1 {
		return 1
	}
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			return m * pow
		}
	}
	return 10 * pow
}

// drawSteps draws values (one per bin of binSec seconds) as a step line.
func drawSteps(img *image.RGBA, values []float64, binSec float64, px func(float64) int, py func(float64) int, c color.RGBA) {
	for i, v := range values {
		x0, x1, y := px(float64(i)*binSec), px(float64(i+1)*binSec), py(v)
		drawLine(img, x0, y, x1, y, lineThickness, c)
		if i+1 < len(values) {
			drawLine(img, x1, y, x1, py(values[i+1]), lineThickness, c)
		}
	}
}

// drawLine draws a straight line of the given thickness (Bresenham, square brush).
func drawLine(img *image.RGBA, x0, y0, x1, y1, thickness int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		for i := range thickness {
			for j := range thickness {
				img.SetRGBA(x0+i-thickness/2, y0+j-thickness/2, c)
			}
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

// drawText draws s with the 5x7 font, its top left corner at (x, y).
func drawText(img *image.RGBA, x, y int, s string, c color.RGBA) {
	for _, r := range s {
		g := glyphs[r]
		for row := range glyphRows {
			for col := range glyphCols {
				if g[row]&(1<<(glyphCols-1-col)) == 0 {
					continue
				}
				for i := range textScale {
					for j := range textScale {
						img.SetRGBA(x+col*textScale+i, y+row*textScale+j, c)
					}
				}
			}
		}
		x += glyphAdvance * textScale
	}
}

// textWidth and textHeight are the size of drawn text, in image pixels.
func textWidth(s string) int { return len([]rune(s)) * glyphAdvance * textScale }
func textHeight() int        { return glyphRows * textScale }

func abs(v int) int { return max(v, -v) }

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}
