package tiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
)

// Manifest is the name of the file describing a tile set.
const Manifest = "tileset.json"

// Limits on a tile set's geometry, so that a bad manifest or flag cannot
// ask for absurd allocations.
const (
	MaxTileSide = 8192
	MaxGrid     = 1000
	MaxNodes    = 256
)

// ErrBadSet reports an invalid tile set description.
var ErrBadSet = errors.New("tiles: bad tile set")

// ID names one tile by its column and row in the grid.
type ID struct{ Col, Row int }

// Name is the tile's file name.
func (id ID) Name() string { return fmt.Sprintf("tile_r%02d_c%02d.jpg", id.Row, id.Col) }

func (id ID) String() string { return fmt.Sprintf("(c%d,r%d)", id.Col, id.Row) }

// Set describes a tile set on disk.
type Set struct {
	Dir      string `json:"-"`
	Cols     int    `json:"cols"`
	Rows     int    `json:"rows"`
	TileW    int    `json:"tile_w"`
	TileH    int    `json:"tile_h"`
	Nodes    int    `json:"nodes"`
	Replicas int    `json:"replicas"`
	Source   string `json:"source"`
	// Layout says how a source map was placed on the grid (Geometry).
	Layout string `json:"layout,omitempty"`
}

// Validate checks the geometry and distribution of s.
func (s Set) Validate() error {
	switch {
	case s.Cols < 1 || s.Rows < 1 || s.Cols > MaxGrid || s.Rows > MaxGrid:
		return fmt.Errorf("%w: grid %dx%d (1..%d per side)", ErrBadSet, s.Cols, s.Rows, MaxGrid)
	case s.TileW < 1 || s.TileH < 1 || s.TileW > MaxTileSide || s.TileH > MaxTileSide:
		return fmt.Errorf("%w: tile size %dx%d (1..%d per side)", ErrBadSet, s.TileW, s.TileH, MaxTileSide)
	case s.Nodes < 1 || s.Nodes > MaxNodes:
		return fmt.Errorf("%w: %d nodes (1..%d)", ErrBadSet, s.Nodes, MaxNodes)
	case s.Replicas < 1 || s.Replicas > s.Nodes:
		return fmt.Errorf("%w: %d replicas on %d nodes", ErrBadSet, s.Replicas, s.Nodes)
	}
	return nil
}

// MapW is the map width in pixels.
func (s Set) MapW() int { return s.Cols * s.TileW }

// MapH is the map height in pixels.
func (s Set) MapH() int { return s.Rows * s.TileH }

// Contains reports whether id is a tile of s.
func (s Set) Contains(id ID) bool {
	return id.Col >= 0 && id.Row >= 0 && id.Col < s.Cols && id.Row < s.Rows
}

// Scales lists the scale factors (1:n) a tile of s can be reduced by
// exactly: the divisors of the greatest common divisor of the tile sides,
// in increasing order.
func (s Set) Scales() []int {
	g := gcd(s.TileW, s.TileH)
	var out []int
	for d := 1; d <= g; d++ {
		if g%d == 0 {
			out = append(out, d)
		}
	}
	return out
}

// ValidScale reports whether tiles of s can be reduced 1:n exactly.
func (s Set) ValidScale(n int) bool {
	return n >= 1 && s.TileW%n == 0 && s.TileH%n == 0
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Hash is the FNV-1a hash of a tile name that places the tile on a node.
func Hash(id ID) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id.Name()))
	return h.Sum64()
}

// NodesOf lists the nodes holding id, primary first, for a set spread over
// nodes with replicas copies.
func NodesOf(id ID, nodes, replicas int) []int {
	if nodes < 1 {
		return nil
	}
	if replicas > nodes {
		replicas = nodes
	}
	first := int(Hash(id) % uint64(nodes))
	out := make([]int, replicas)
	for i := range out {
		out[i] = (first + i) % nodes
	}
	return out
}

// Holders lists the nodes holding id, primary first.
func (s Set) Holders(id ID) []int { return NodesOf(id, s.Nodes, s.Replicas) }

// NodeDir is the directory of node k in the set rooted at dir.
func NodeDir(dir string, k int) string { return filepath.Join(dir, fmt.Sprintf("node%02d", k)) }

// Path is the file of tile id on node k.
func (s Set) Path(id ID, node int) string { return filepath.Join(NodeDir(s.Dir, node), id.Name()) }

// Open reads the manifest of the tile set in dir.
func Open(dir string) (Set, error) {
	b, err := os.ReadFile(filepath.Join(dir, Manifest))
	if err != nil {
		return Set{}, fmt.Errorf("tiles: open tile set: %w", err)
	}
	var s Set
	if err := json.Unmarshal(b, &s); err != nil {
		return Set{}, fmt.Errorf("%w: %s: %v", ErrBadSet, filepath.Join(dir, Manifest), err)
	}
	s.Dir = dir
	if err := s.Validate(); err != nil {
		return Set{}, fmt.Errorf("%s: %w", filepath.Join(dir, Manifest), err)
	}
	return s, nil
}

// Save writes the manifest of s into s.Dir.
func (s Set) Save() error {
	if err := s.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.Dir, Manifest), append(b, '\n'), 0o644)
}

// All lists every tile of s in row-major order.
func (s Set) All() []ID {
	out := make([]ID, 0, s.Cols*s.Rows)
	for r := 0; r < s.Rows; r++ {
		for c := 0; c < s.Cols; c++ {
			out = append(out, ID{c, r})
		}
	}
	return out
}
