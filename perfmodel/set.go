package perfmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Set is a collection of fitted models by name, as saved to JSON. It can
// also carry the observations they were fitted to.
type Set struct {
	Models       map[string]*Model        `json:"models"`                 // by name (Put sets Model.Name)
	Observations map[string][]Observation `json:"observations,omitempty"` // the points fitted, by model name
}

// Put stores m under name (setting m.Name).
func (s *Set) Put(name string, m *Model) {
	if s.Models == nil {
		s.Models = map[string]*Model{}
	}
	m.Name = name
	s.Models[name] = m
}

// Get returns the model called name.
func (s *Set) Get(name string) (*Model, error) {
	m, ok := s.Models[name]
	if !ok {
		return nil, fmt.Errorf("perfmodel: no model %q", name)
	}
	return m, nil
}

// Write encodes the set as indented JSON.
func (s *Set) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// Read decodes a set written by Write and checks each model's shape.
func Read(r io.Reader) (*Set, error) {
	var s Set
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, fmt.Errorf("perfmodel: %w", err)
	}
	for name, m := range s.Models {
		if m == nil {
			return nil, fmt.Errorf("perfmodel: model %q is null", name)
		}
		q := len(m.Form)
		if q == 0 || len(m.Coef) != q || (m.Cov != nil && len(m.Cov) != q) {
			return nil, fmt.Errorf("perfmodel: model %q has %d terms and %d coefficients", name, q, len(m.Coef))
		}
		for _, row := range m.Cov {
			if len(row) != q {
				return nil, fmt.Errorf("perfmodel: model %q has a malformed covariance", name)
			}
		}
	}
	return &s, nil
}

// Save writes the set to a file, atomically (through a temporary file in
// the same directory).
func (s *Set) Save(path string) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".perfmodel-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if err := s.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Load reads a set saved by Save.
func Load(path string) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := Read(f)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("perfmodel: %s", path), err)
	}
	return s, nil
}
