package statuspage

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"
)

//go:embed page.html.tmpl
var pageTemplate string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"dollars": func(f float64) string { return fmt.Sprintf("$%.4f", f) },
	"pct":     func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"clock":   func(t time.Time) string { return t.UTC().Format("15:04:05 MST") },
	"date":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") },
	"seconds": func(d time.Duration) int { return int(math.Ceil(d.Seconds())) },
	"kindClass": func(s string) string {
		return strings.ReplaceAll(s, " ", "-")
	},
}).Parse(pageTemplate))

// Render writes v as one self-contained HTML page.
func Render(w io.Writer, v View) error {
	var buf bytes.Buffer
	if err := page.Execute(&buf, struct {
		View
		Chart chart
	}{v, newChart(v.Cost)}); err != nil {
		return fmt.Errorf("rendering status page: %w", err)
	}
	_, err := buf.WriteTo(w)
	return err
}

// chart is the cost-over-time SVG, laid out in Go so the template only
// prints coordinates.
type chart struct {
	Width, Height float64
	// Left, Right, Top and Bottom bound the plot area.
	Left, Right, Top, Bottom float64
	// Line is the step line's points; Area closes it to the x axis.
	Line string
	Area string
	Dots []chartPoint
	// YTicks and XTicks are the axes' labels.
	YTicks []chartPoint
	XTicks []chartPoint
}

type chartPoint struct {
	X, Y   float64
	Label  string
	Anchor string
}

// newChart lays the samples out as a step line: the cost holds until the
// next sample changes it. Points with labels are spread evenly; others sit
// at their time.
func newChart(samples []Sample) chart {
	c := chart{Width: 760, Height: 170, Left: 70, Right: 740, Top: 12, Bottom: 140}
	if len(samples) == 0 {
		return c
	}
	maxCost := 0.0
	for _, s := range samples {
		maxCost = max(maxCost, s.CostPerHour)
	}
	top := niceCeiling(maxCost * 1.1)
	y := func(cost float64) float64 { return c.Bottom - (c.Bottom-c.Top)*cost/top }
	xs := make([]float64, len(samples))
	labelled := samples[0].Label != ""
	span := samples[len(samples)-1].At.Sub(samples[0].At).Seconds()
	for i, s := range samples {
		switch {
		case len(samples) == 1:
			xs[i] = c.Left
		case labelled:
			// Each labelled value holds for an equal share of the width.
			xs[i] = c.Left + (c.Right-c.Left)*float64(i)/float64(len(samples))
		case span <= 0:
			xs[i] = c.Left + (c.Right-c.Left)*float64(i)/float64(len(samples)-1)
		default:
			xs[i] = c.Left + (c.Right-c.Left)*s.At.Sub(samples[0].At).Seconds()/span
		}
	}
	var pts []string
	for i, s := range samples {
		if i > 0 {
			pts = append(pts, coord(xs[i], y(samples[i-1].CostPerHour)))
		}
		pts = append(pts, coord(xs[i], y(s.CostPerHour)))
		label := s.Label
		if label == "" {
			label = s.At.UTC().Format("15:04:05")
		}
		c.Dots = append(c.Dots, chartPoint{X: xs[i], Y: y(s.CostPerHour), Label: fmt.Sprintf("%s: $%.4f/h, %d node(s)", label, s.CostPerHour, s.Nodes)})
	}
	last := xs[len(xs)-1]
	if len(samples) == 1 || labelled {
		// The last value holds to the right edge: one sample so far holds
		// until now, a labelled step holds for its share.
		last = c.Right
		pts = append(pts, coord(last, y(samples[len(samples)-1].CostPerHour)))
	}
	c.Line = strings.Join(pts, " ")
	c.Area = fmt.Sprintf("M%s L%s L%s Z", coord(c.Left, c.Bottom), c.Line, coord(last, c.Bottom))
	for _, f := range []float64{0, 0.5, 1} {
		c.YTicks = append(c.YTicks, chartPoint{X: c.Left - 8, Y: y(top * f), Label: fmt.Sprintf("$%.3f/h", top*f), Anchor: "end"})
	}
	if labelled {
		for i, s := range samples {
			c.XTicks = append(c.XTicks, chartPoint{X: xs[i] + 4, Y: c.Bottom + 20, Label: tickLabel(s), Anchor: "start"})
		}
		return c
	}
	first, end := samples[0], samples[len(samples)-1]
	c.XTicks = append(c.XTicks, chartPoint{X: c.Left, Y: c.Bottom + 20, Label: tickLabel(first), Anchor: "start"})
	if len(samples) > 1 {
		c.XTicks = append(c.XTicks, chartPoint{X: xs[len(xs)-1], Y: c.Bottom + 20, Label: tickLabel(end), Anchor: "end"})
	}
	return c
}

func tickLabel(s Sample) string {
	if s.Label != "" {
		return s.Label
	}
	return s.At.UTC().Format("15:04:05 MST")
}

func coord(x, y float64) string { return fmt.Sprintf("%.1f,%.1f", x, y) }

// niceCeiling rounds f up to 1, 2 or 5 times a power of ten (0.01 at
// least, so an empty cluster still has an axis).
func niceCeiling(f float64) float64 {
	if f <= 0.01 {
		return 0.01
	}
	p := math.Pow(10, math.Floor(math.Log10(f)))
	for _, m := range []float64{1, 2, 5, 10} {
		if f <= m*p {
			return m * p
		}
	}
	return 10 * p
}
