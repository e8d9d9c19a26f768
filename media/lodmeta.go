package media

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// LODMeta is what a Streamed SOG's lod-meta.json says of its levels: their Gaussian counts, its
// unit files (each an unbundled SOG's meta.json, relative to lod-meta.json), which level each
// unit holds and where in the units each level's Gaussians are.
type LODMeta struct {
	Counts    []int
	Filenames []string
	// FileLevel is the level of each of Filenames' units, as the tree's leaves name it; -1 for a
	// unit no leaf names.
	FileLevel []int
	// Runs are each level's runs of Gaussians, leaf by leaf in the tree's order; Sums their
	// Gaussian counts.
	Runs map[int][]LODRun
	Sums map[int]int64
}

// LODRun is one run of a level's Gaussians in a LOD folder: rows Offset up to Offset+Count of
// the SOG whose meta.json is File (relative to lod-meta.json).
type LODRun struct {
	File          string
	Offset, Count int
}

// ParseLODMeta reads lod-meta.json (version 1, as splat-transform writes it). It may be an
// upload's: a tree deeper than 64 levels or naming files, levels or rows that do not exist is
// refused (an *InputError).
func ParseLODMeta(b []byte) (LODMeta, error) {
	var raw struct {
		Counts    []int           `json:"counts"`
		Filenames []string        `json:"filenames"`
		Tree      json.RawMessage `json:"tree"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return LODMeta{}, badSOG("lod-meta.json: %w", err)
	}
	if len(raw.Tree) == 0 {
		return LODMeta{}, badSOG("lod-meta.json: no tree")
	}
	m := LODMeta{Counts: raw.Counts, Filenames: raw.Filenames, FileLevel: make([]int, len(raw.Filenames)),
		Runs: map[int][]LODRun{}, Sums: map[int]int64{}}
	for i := range m.FileLevel {
		m.FileLevel[i] = -1
	}
	type entry struct{ File, Offset, Count int }
	type node struct {
		Children []json.RawMessage `json:"children"`
		Lods     map[string]entry  `json:"lods"`
	}
	var walk func(raw json.RawMessage, depth int) error
	walk = func(raw json.RawMessage, depth int) error {
		if depth > 64 {
			return badSOG("lod-meta.json tree: deeper than 64 levels")
		}
		var n node
		if err := json.Unmarshal(raw, &n); err != nil {
			return badSOG("lod-meta.json tree: %w", err)
		}
		// Map order is random; a leaf's levels go to separate runs, and leaves keep the tree's
		// order, so the result is the same on every call.
		for l, e := range n.Lods {
			lv, err := strconv.Atoi(l)
			if err != nil || lv < 0 || e.File < 0 || e.File >= len(m.Filenames) || e.Offset < 0 || e.Count < 0 {
				return badSOG("lod-meta.json tree: level %q file %d rows %d+%d", l, e.File, e.Offset, e.Count)
			}
			m.FileLevel[e.File] = lv
			if e.Count == 0 {
				continue
			}
			m.Runs[lv] = append(m.Runs[lv], LODRun{File: m.Filenames[e.File], Offset: e.Offset, Count: e.Count})
			m.Sums[lv] += int64(e.Count)
		}
		for _, c := range n.Children {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(raw.Tree, 0); err != nil {
		return LODMeta{}, err
	}
	return m, nil
}

// LevelFiles returns the unit files (entries of Filenames) that hold level l.
func (m LODMeta) LevelFiles(l int) []string {
	var out []string
	for i, lv := range m.FileLevel {
		if lv == l {
			out = append(out, m.Filenames[i])
		}
	}
	return out
}

// SOGTextures returns the files an unbundled SOG's meta.json names (its WebP textures, relative
// to it), meta.json itself not included.
func SOGTextures(meta []byte) ([]string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(meta, &m); err != nil {
		return nil, fmt.Errorf("sog meta.json: %w", err)
	}
	var out []string
	for _, v := range m {
		var attr struct {
			Files []string `json:"files"`
		}
		if json.Unmarshal(v, &attr) == nil {
			out = append(out, attr.Files...)
		}
	}
	return out, nil
}
