// Package web serves the map viewer over HTTP: a page with the map that
// pans (drag, arrow keys) and zooms (wheel, buttons), each view rendered
// by a loader.Loader and sent as PNG with its render time and the source
// of every tile.
package web

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"image/png"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/view"
)

//go:embed index.html
var indexHTML string

var indexTmpl = template.Must(template.New("index").Parse(indexHTML))

// MaxWindow bounds each side of a window the page may ask for.
const MaxWindow = 2048

// DefaultRenderTimeout bounds the rendering of one view when
// Server.RenderTimeout is zero. A render also stops when its client goes
// away.
const DefaultRenderTimeout = 2 * time.Minute

// Server is the viewer's HTTP handler.
type Server struct {
	Set    tiles.Set
	Loader loader.Loader
	// Window is the default window (600x600 when zero).
	Window view.Window
	// Kind describes the loader on the page ("local", "cluster, 3 daemons").
	Kind string
	// Daemons, if set, reports the daemons of a cluster loader: the page
	// shows which are down.
	Daemons func() []Daemon
	// OnRender, if set, is called with the plan of every rendered view.
	OnRender func(view.Plan)
	// MaxRenders bounds the views rendered at once (default GOMAXPROCS:
	// each view already loads its tiles in parallel), and so the memory
	// renders take: a view's bitmap and fragments. MaxQueue bounds the
	// requests waiting for a turn (default 4*MaxRenders); beyond it a
	// request is refused with 429 Too Many Requests and Retry-After.
	MaxRenders, MaxQueue int
	// RenderTimeout bounds one render (default DefaultRenderTimeout).
	RenderTimeout time.Duration
	// AllowDrop enables POST /cache/drop, which empties the loader's
	// cache (if it has one): latency benchmarks time uncached views.
	AllowDrop bool

	mux   *http.ServeMux
	once  sync.Once
	slots chan struct{} // one per render under way
	stats struct {
		queued                       atomic.Int64
		rendered, rejected, canceled atomic.Int64
	}
}

// Daemon is one daemon as the page shows it.
type Daemon struct {
	Proc   int
	Nodes  []int // node directories it serves
	Up     bool
	Reason string    // why it is down
	Since  time.Time // when it went down or came back (zero: up from the start)
	Served int64     // fragments delivered
}

// Status is what /status reports: the daemons and the render counters.
type Status struct {
	Kind    string
	Daemons []Daemon `json:",omitempty"`
	Down    int
	Stats   Stats
}

func (s *Server) status() Status {
	st := Status{Kind: s.Kind, Stats: s.Stats()}
	if s.Daemons != nil {
		st.Daemons = s.Daemons()
		for _, d := range st.Daemons {
			if !d.Up {
				st.Down++
			}
		}
	}
	return st
}

func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(s.status())
}

// Stats counts the server's renders.
type Stats struct {
	// Rendering and Queued are the requests rendering now and waiting
	// for a turn.
	Rendering, Queued int
	// Rendered views were sent; Rejected requests got 429; Canceled
	// renders stopped because their client went away.
	Rendered, Rejected, Canceled int64
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	s.once.Do(s.init)
	return Stats{Rendering: len(s.slots), Queued: int(s.stats.queued.Load()),
		Rendered: s.stats.rendered.Load(), Rejected: s.stats.rejected.Load(), Canceled: s.stats.canceled.Load()}
}

func (s *Server) init() {
	if s.Window.W == 0 {
		s.Window = view.Window{W: 600, H: 600}
	}
	if s.RenderTimeout <= 0 {
		s.RenderTimeout = DefaultRenderTimeout
	}
	if s.MaxRenders <= 0 {
		s.MaxRenders = runtime.GOMAXPROCS(0)
	}
	if s.MaxQueue <= 0 {
		s.MaxQueue = 4 * s.MaxRenders
	}
	s.slots = make(chan struct{}, s.MaxRenders)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /render", s.render)
	s.mux.HandleFunc("GET /info", s.info)
	s.mux.HandleFunc("GET /status", s.serveStatus)
	if s.AllowDrop {
		s.mux.HandleFunc("POST /cache/drop", s.drop)
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.once.Do(s.init)
	s.mux.ServeHTTP(w, r)
}

// Info is what the page learns about the map.
type Info struct {
	MapW, MapH   int
	TileW, TileH int
	Scales       []int
	Window       view.Window
	Kind         string
}

func (s *Server) infoOf() Info {
	return Info{s.Set.MapW(), s.Set.MapH(), s.Set.TileW, s.Set.TileH, s.Set.Scales(), s.Window, s.Kind}
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.infoOf())
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	info, _ := json.Marshal(s.infoOf())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	indexTmpl.Execute(w, map[string]any{"Info": template.JS(info), "Window": s.Window})
}

// ViewRequest is a parsed /render query.
type ViewRequest struct {
	X, Y, Scale int
	Win         view.Window
}

// parseView reads x, y, s, w, h; missing w/h take the default window.
func (s *Server) parseView(r *http.Request) (view.Plan, error) {
	q := r.URL.Query()
	get := func(name string, def int, need bool) (int, error) {
		v := q.Get(name)
		if v == "" {
			if need {
				return 0, fmt.Errorf("%w: missing %s", view.ErrBadRequest, name)
			}
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < -1<<40 || n > 1<<40 {
			return 0, fmt.Errorf("%w: %s=%s is not a number", view.ErrBadRequest, name, quoteShort(v))
		}
		return n, nil
	}
	var vr ViewRequest
	var err error
	if vr.X, err = get("x", 0, true); err != nil {
		return view.Plan{}, err
	}
	if vr.Y, err = get("y", 0, true); err != nil {
		return view.Plan{}, err
	}
	if vr.Scale, err = get("s", 0, true); err != nil {
		return view.Plan{}, err
	}
	if vr.Win.W, err = get("w", s.Window.W, false); err != nil {
		return view.Plan{}, err
	}
	if vr.Win.H, err = get("h", s.Window.H, false); err != nil {
		return view.Plan{}, err
	}
	if vr.Win.W < 1 || vr.Win.H < 1 || vr.Win.W > MaxWindow || vr.Win.H > MaxWindow {
		return view.Plan{}, fmt.Errorf("%w: window %dx%d (1..%d per side)", view.ErrBadRequest, vr.Win.W, vr.Win.H, MaxWindow)
	}
	if vr.Scale < 1 || vr.Scale > 1<<20 {
		return view.Plan{}, fmt.Errorf("%w: scale 1:%d", view.ErrBadRequest, vr.Scale)
	}
	if vr.X < 0 || vr.Y < 0 || vr.X >= s.Set.MapW() || vr.Y >= s.Set.MapH() {
		return view.Plan{}, fmt.Errorf("%w: origin (%d,%d) outside the %dx%d map", view.ErrBadRequest, vr.X, vr.Y, s.Set.MapW(), s.Set.MapH())
	}
	reg := view.Region{X: vr.X, Y: vr.Y, W: min(vr.Win.W*vr.Scale, s.Set.MapW()-vr.X), H: min(vr.Win.H*vr.Scale, s.Set.MapH()-vr.Y)}
	return view.At(s.Set, reg, vr.Scale)
}

// RetryAfter is what a refused request is told to wait, in seconds.
const RetryAfter = 1

// turn waits for a render slot. It reports false, having answered the
// request, when the queue is full (429) or the client went away.
func (s *Server) turn(w http.ResponseWriter, r *http.Request) bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
	}
	if s.stats.queued.Add(1) > int64(s.MaxQueue) {
		s.stats.queued.Add(-1)
		s.stats.rejected.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
		http.Error(w, fmt.Sprintf("busy: %d views rendering and %d waiting; retry in %d s", s.MaxRenders, s.MaxQueue, RetryAfter), http.StatusTooManyRequests)
		return false
	}
	defer s.stats.queued.Add(-1)
	select {
	case s.slots <- struct{}{}:
		return true
	case <-r.Context().Done():
		s.stats.canceled.Add(1)
		return false
	}
}

func (s *Server) render(w http.ResponseWriter, r *http.Request) {
	p, err := s.parseView(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !s.turn(w, r) {
		return
	}
	defer func() { <-s.slots }()
	// The request's context ends when the client goes away: the loads
	// not yet started are then dropped.
	ctx, cancel := contextWithTimeout(r, s.RenderTimeout)
	defer cancel()
	res, rerr := view.Render(ctx, s.Loader, p)
	if r.Context().Err() != nil {
		s.stats.canceled.Add(1)
		return
	}
	if res == nil {
		http.Error(w, rerr.Error(), http.StatusInternalServerError)
		return
	}
	if s.OnRender != nil {
		s.OnRender(p)
	}
	h := w.Header()
	h.Set("Content-Type", "image/png")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Render-Ms", fmt.Sprintf("%.1f", float64(res.Elapsed.Microseconds())/1000))
	h.Set("X-Region", fmt.Sprintf("%d,%d,%d,%d", p.Region.X, p.Region.Y, p.Region.W, p.Region.H))
	h.Set("X-Scale", strconv.Itoa(p.Scale))
	h.Set("X-Sources", sources(res))
	h.Set("X-Tiles", tileSources(res))
	if rerr != nil {
		h.Set("X-Tile-Errors", headerSafe(rerr.Error(), 4096))
	}
	// Encoded straight to the client: no second copy of the view. Stored
	// (uncompressed) deflate blocks: on loopback or a LAN the larger body
	// (4 bytes a pixel) costs less than compressing it and the browser
	// inflating it (a cached pan at 1:4, event to image: 65-79 ms against
	// 111-123 ms with the fastest compression).
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := png.Encoder{CompressionLevel: png.NoCompression}
	if enc.Encode(bw, res.Img) == nil && bw.Flush() == nil {
		s.stats.rendered.Add(1)
	}
}

// sources summarises who served the tiles: "daemon 1=20; daemon 2=18".
func sources(res *view.Result) string {
	count := map[string]int{}
	for _, t := range res.Tiles {
		src := t.Source
		if t.Err != nil {
			src = "failed"
		}
		count[src]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, count[k])
	}
	return headerSafe(strings.Join(parts, "; "), 1024)
}

// tileSources lists "col,row,x,y,source" per tile, separated by ";".
func tileSources(res *view.Result) string {
	parts := make([]string, len(res.Tiles))
	for i, t := range res.Tiles {
		src := t.Source
		if t.Err != nil {
			src = "failed"
		}
		parts[i] = fmt.Sprintf("%d,%d,%d,%d,%s", t.ID.Col, t.ID.Row, t.At.X, t.At.Y, src)
	}
	return headerSafe(strings.Join(parts, ";"), 64<<10)
}

func headerSafe(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return ' '
		}
		return r
	}, s)
	if len(s) > max {
		s = s[:max]
	}
	return s
}

// IsBadRequest reports whether err is the client's fault.
func IsBadRequest(err error) bool { return errors.Is(err, view.ErrBadRequest) }

// maxEcho bounds how much of a bad query value an error message repeats.
const maxEcho = 40

// quoteShort quotes v for an error message, cut to maxEcho bytes.
func quoteShort(v string) string {
	if len(v) <= maxEcho {
		return strconv.Quote(v)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(v[:maxEcho]), len(v))
}

func (s *Server) drop(w http.ResponseWriter, r *http.Request) {
	d, ok := s.Loader.(interface{ Drop() })
	if !ok {
		http.Error(w, "the loader has no cache", http.StatusNotFound)
		return
	}
	d.Drop()
	w.WriteHeader(http.StatusNoContent)
}
