package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg/vgimg"
)

// saveCanvas writes the image as PNG (the only format a tiled canvas is
// drawn to here).
func saveCanvas(img *vgimg.Canvas, file string) error {
	if ext := strings.ToLower(filepath.Ext(file)); ext != ".png" {
		return fmt.Errorf("%s: only .png is supported", file)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
