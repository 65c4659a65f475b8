package main

import (
	"context"
	"fmt"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/internal/browser"
)

// shownView is one view the page showed (window.mapviewerViews).
type shownView struct {
	X, Y, S  int
	What     string
	Ms       float64 // from the input event to the image on screen
	RenderMs float64 // the server's render time
	Cached   bool    // every tile from the fragment cache
	Sources  string
	Steps    viewSteps
}

// viewSteps divides a view's time (ms): from the input event to the
// request, to the response's headers (the server's render), the body
// (PNG encoding and transfer), the image's decoding, and the frame that
// shows it.
type viewSteps struct {
	ToRequest, ToHeaders, Body, Decode, ToScreen float64
}

// pageDriver works the viewer's page through real input events and
// reads back the views it showed.
type pageDriver struct {
	b *browser.Browser
}

// views returns how many views the page has shown.
func (d pageDriver) views(ctx context.Context) (int, error) {
	var n int
	err := d.b.Eval(ctx, "window.mapviewerViews ? window.mapviewerViews.length : 0", &n)
	return n, err
}

// waitView waits until the page has shown more than n views and returns
// the last.
func (d pageDriver) waitView(ctx context.Context, n int) (shownView, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		m, err := d.views(ctx)
		if err != nil {
			return shownView{}, err
		}
		if m > n {
			var v shownView
			err := d.b.Eval(ctx, "window.mapviewerViews[window.mapviewerViews.length-1]", &v)
			return v, err
		}
		var msg string
		d.b.Eval(ctx, `document.getElementById("err").textContent`, &msg)
		if msg != "" {
			return shownView{}, fmt.Errorf("the page says: %s", msg)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return shownView{}, fmt.Errorf("no new view within 2 minutes (%d shown)", m)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// do performs one input and returns the view it led to.
func (d pageDriver) do(ctx context.Context, input func(context.Context) error) (shownView, error) {
	n, err := d.views(ctx)
	if err != nil {
		return shownView{}, err
	}
	if err := input(ctx); err != nil {
		return shownView{}, err
	}
	return d.waitView(ctx, n)
}

func (d pageDriver) key(k string) func(context.Context) error {
	return func(ctx context.Context) error { return d.b.Key(ctx, k) }
}

func (d pageDriver) wheel(x, y, dy float64) func(context.Context) error {
	return func(ctx context.Context) error { return d.b.Wheel(ctx, x, y, dy) }
}

func (d pageDriver) drag(x0, y0, x1, y1 float64) func(context.Context) error {
	return func(ctx context.Context) error { return d.b.Drag(ctx, x0, y0, x1, y1, 5) }
}
