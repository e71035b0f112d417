// Package pngplot draws a grid of gonum plots into one PNG file, for the
// figures of the evaluation commands. The bytes depend only on the plots.
package pngplot

import (
	"bytes"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// titleStrip is the height of the title strip above the grid.
const titleStrip = 0.4 * vg.Inch

// Write draws grid (rows × columns of plots, each cell cellW × cellH) at
// 96 dpi on a white background, with title (if not empty) centred in a
// strip above the grid, and writes the PNG to path.
func Write(path, title string, grid [][]*plot.Plot, cellW, cellH vg.Length) error {
	rows := len(grid)
	if rows == 0 || len(grid[0]) == 0 {
		return nil
	}
	cols := len(grid[0])
	w, h := vg.Length(cols)*cellW, vg.Length(rows)*cellH
	if title != "" {
		h += titleStrip
	}
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	body := dc
	if title != "" {
		sty := draw.TextStyle{Color: color.Black, Font: plot.DefaultFont, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
		sty.Font.Size = vg.Points(14)
		dc.FillText(sty, vg.Point{X: w / 2, Y: h - 0.08*vg.Inch}, title)
		body = draw.Crop(dc, 0, 0, 0, -titleStrip)
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 0.3 * vg.Inch, PadY: 0.3 * vg.Inch,
		PadTop: 0.1 * vg.Inch, PadBottom: 0.1 * vg.Inch, PadLeft: 0.1 * vg.Inch, PadRight: 0.2 * vg.Inch}
	canvases := plot.Align(grid, tiles, body)
	for r := range rows {
		for c := range cols {
			grid[r][c].Draw(canvases[r][c])
		}
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
