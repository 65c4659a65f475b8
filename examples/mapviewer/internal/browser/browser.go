// Package browser drives a headless Chromium through the DevTools
// protocol: it loads a page, sends real input events (mouse drags, wheel,
// keys) and evaluates JavaScript, for the map viewer's browser test and
// its latency benchmark.
package browser

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoChromium reports that no Chromium binary was found.
var ErrNoChromium = errors.New("browser: chromium not installed (apt-get install chromium)")

// Find returns the path of a Chromium binary.
func Find() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// Browser is a headless Chromium with one page.
type Browser struct {
	cmd     *exec.Cmd
	profile string
	done    chan struct{}
	ws      *wsConn

	mu      sync.Mutex
	next    int64
	pending map[int64]chan response
	subs    map[string][]chan json.RawMessage
	err     error
}

type response struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type message struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	response
}

// Launch starts Chromium with a w x h viewport and connects to its page.
func Launch(ctx context.Context, w, h int) (*Browser, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	profile, err := os.MkdirTemp("", "mapviewer-chromium-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
		"--user-data-dir="+profile, fmt.Sprintf("--window-size=%d,%d", w, h), "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-features=Translate,MediaRouter", "--hide-scrollbars", "--force-device-scale-factor=1", "about:blank")
	// Its own process group, so that Close ends the renderer and GPU
	// processes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Chromium keeps its singleton socket in a directory of its own under
	// TMPDIR, which a killed browser leaves behind: inside the profile,
	// Close removes it too.
	cmd.Env = append(os.Environ(), "TMPDIR="+profile)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(profile)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("browser: starting %s: %w", bin, err)
	}
	b := &Browser{cmd: cmd, profile: profile, done: make(chan struct{}), pending: map[int64]chan response{}, subs: map[string][]chan json.RawMessage{}}
	urlc := make(chan string, 1)
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			if log.Len() < 16<<10 {
				log.WriteString(sc.Text() + "\n")
			}
			logMu.Unlock()
			if u, ok := wsURLFromLine(sc.Text()); ok {
				select {
				case urlc <- u:
				default:
				}
			}
		}
		cmd.Wait()
		close(b.done)
	}()
	var browserURL string
	select {
	case browserURL = <-urlc:
	case <-b.done:
	case <-ctx.Done():
	case <-time.After(60 * time.Second):
	}
	if browserURL == "" {
		b.Close()
		logMu.Lock()
		defer logMu.Unlock()
		return nil, fmt.Errorf("browser: no DevTools address from %s:\n%s", bin, log.String())
	}
	pageURL, err := pageTarget(ctx, browserURL)
	if err == nil {
		b.ws, err = dialWS(pageURL)
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("browser: %w", err)
	}
	go b.read()
	if err := b.Call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": w, "height": h, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// pageTarget is the DevTools address of the browser's first page.
func pageTarget(ctx context.Context, browserURL string) (string, error) {
	host := strings.TrimPrefix(browserURL, "ws://")
	host, _, _ = strings.Cut(host, "/")
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+host+"/json/list", nil)
		r, err := http.DefaultClient.Do(req)
		if err == nil {
			var ts []struct{ Type, WebSocketDebuggerURL string }
			err = json.NewDecoder(r.Body).Decode(&ts)
			r.Body.Close()
			for _, t := range ts {
				if t.Type == "page" && t.WebSocketDebuggerURL != "" {
					return t.WebSocketDebuggerURL, nil
				}
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("no page target at %s: %v", host, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *Browser) read() {
	for {
		p, err := b.ws.ReadMessage()
		if err != nil {
			b.mu.Lock()
			b.err = err
			for id, c := range b.pending {
				close(c)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m message
		if json.Unmarshal(p, &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if c, ok := b.pending[m.ID]; ok {
				c <- m.response
				delete(b.pending, m.ID)
			}
		} else {
			for _, c := range b.subs[m.Method] {
				select {
				case c <- m.Params:
				default:
				}
			}
		}
		b.mu.Unlock()
	}
}

// Call sends a DevTools command and decodes its result into out (if not nil).
func (b *Browser) Call(ctx context.Context, method string, params any, out any) error {
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return fmt.Errorf("browser: %s: %w", method, b.err)
	}
	b.next++
	id := b.next
	c := make(chan response, 1)
	b.pending[id] = c
	b.mu.Unlock()
	if params == nil {
		params = struct{}{}
	}
	req, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	if err := b.ws.WriteText(req); err != nil {
		return fmt.Errorf("browser: %s: %w", method, err)
	}
	select {
	case r, ok := <-c:
		if !ok {
			return fmt.Errorf("browser: %s: connection lost", method)
		}
		if r.Error != nil {
			return fmt.Errorf("browser: %s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("browser: %s: %w", method, ctx.Err())
	}
}

// subscribe returns a channel of the params of event method.
func (b *Browser) subscribe(method string) chan json.RawMessage {
	c := make(chan json.RawMessage, 16)
	b.mu.Lock()
	b.subs[method] = append(b.subs[method], c)
	b.mu.Unlock()
	return c
}

// Navigate loads url and waits for its load event.
func (b *Browser) Navigate(ctx context.Context, url string) error {
	if err := b.Call(ctx, "Page.enable", nil, nil); err != nil {
		return err
	}
	loaded := b.subscribe("Page.loadEventFired")
	var r struct{ ErrorText string }
	if err := b.Call(ctx, "Page.navigate", map[string]any{"url": url}, &r); err != nil {
		return err
	}
	if r.ErrorText != "" {
		return fmt.Errorf("browser: navigate %s: %s", url, r.ErrorText)
	}
	select {
	case <-loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("browser: navigate %s: %w", url, ctx.Err())
	}
}

// Eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its value into out (if not nil).
func (b *Browser) Eval(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.Call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &r); err != nil {
		return err
	}
	if e := r.ExceptionDetails; e != nil {
		return fmt.Errorf("browser: %s: %s %s", expr, e.Text, e.Exception.Description)
	}
	if out != nil && len(r.Result.Value) > 0 {
		return json.Unmarshal(r.Result.Value, out)
	}
	return nil
}

var keys = map[string]int{"ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39, "ArrowDown": 40}

// Key presses and releases a key ("ArrowRight", "+", ...).
func (b *Browser) Key(ctx context.Context, key string) error {
	ev := map[string]any{"key": key, "code": key, "windowsVirtualKeyCode": keys[key], "nativeVirtualKeyCode": keys[key]}
	if len(key) == 1 {
		ev["text"] = key
	}
	for _, typ := range []string{"keyDown", "keyUp"} {
		ev["type"] = typ
		if err := b.Call(ctx, "Input.dispatchKeyEvent", ev, nil); err != nil {
			return err
		}
	}
	return nil
}

func (b *Browser) mouse(ctx context.Context, typ string, x, y float64, buttons int, extra map[string]any) error {
	ev := map[string]any{"type": typ, "x": x, "y": y, "buttons": buttons}
	if typ == "mousePressed" || typ == "mouseReleased" {
		ev["button"], ev["clickCount"] = "left", 1
	}
	for k, v := range extra {
		ev[k] = v
	}
	return b.Call(ctx, "Input.dispatchMouseEvent", ev, nil)
}

// Drag presses the left button at (x0, y0), moves to (x1, y1) in steps
// and releases it there.
func (b *Browser) Drag(ctx context.Context, x0, y0, x1, y1 float64, steps int) error {
	if err := b.mouse(ctx, "mouseMoved", x0, y0, 0, nil); err != nil {
		return err
	}
	if err := b.mouse(ctx, "mousePressed", x0, y0, 1, nil); err != nil {
		return err
	}
	for i := 1; i <= steps; i++ {
		t := float64(i) / float64(steps)
		if err := b.mouse(ctx, "mouseMoved", x0+(x1-x0)*t, y0+(y1-y0)*t, 1, nil); err != nil {
			return err
		}
	}
	return b.mouse(ctx, "mouseReleased", x1, y1, 0, nil)
}

// Wheel turns the wheel at (x, y); deltaY < 0 scrolls up.
func (b *Browser) Wheel(ctx context.Context, x, y, deltaY float64) error {
	return b.mouse(ctx, "mouseWheel", x, y, 0, map[string]any{"deltaX": 0, "deltaY": deltaY})
}

// Click clicks the left button at (x, y).
func (b *Browser) Click(ctx context.Context, x, y float64) error {
	if err := b.mouse(ctx, "mousePressed", x, y, 1, nil); err != nil {
		return err
	}
	return b.mouse(ctx, "mouseReleased", x, y, 0, nil)
}

// Screenshot returns the page as PNG.
func (b *Browser) Screenshot(ctx context.Context) ([]byte, error) {
	var r struct{ Data string }
	if err := b.Call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &r); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(r.Data)
}

// Close stops the browser and removes its profile. It may be called more
// than once.
func (b *Browser) Close() error {
	if b.ws != nil {
		b.ws.Close()
	}
	if b.cmd.Process != nil {
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-b.done
	return os.RemoveAll(b.profile)
}
