package scene

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// levelData version 1 (contract item 11, docs/embeds.md "levelData"): the viewer state an editor
// saves with a scene.
//
//	{version?: 1,
//	 camera?: {position: [x,y,z], target: [x,y,z], fov?: degrees 1-179},
//	 annotations?: [{id, position, title, text?, camera?}]   (at most 200)
//	 background?: {color: '#rrggbb'},
//	 post?: {exposure?: -10..10, toneMapping?: 'linear'|'aces'|'neutral'},
//	 audio?: {url, loop?: bool, volume?: 0-1},
//	 orientation?: {rotation: [x,y,z] Euler degrees, XYZ order, each in -360..360},
//	 ...any other key, kept as it is}
//
// orientation is this service's extension: 3DGS training data is stored y-down, so a scene
// without it is drawn turned 180° about X (the field's convention, as PlayCanvas's and Spark's
// examples do); [0,0,0] draws it as stored. Every camera lives in the world the viewer renders:
// Y up, after orientation.
//
// Unknown keys, at the top and inside the known objects, are kept: levelData is the editor's
// document and a newer editor may write fields this version does not know. Only the shapes
// above are checked, so that no reader (the viewer, the room, a clone) ever meets a field of
// the wrong type.
const (
	levelDataVersion  = 1
	maxAnnotations    = 200
	maxAnnotationID   = 64
	maxAnnotationName = 120
	maxAnnotationText = 2000
	minFOV, maxFOV    = 1, 179
	maxExposure       = 10
	maxOrientation    = 360
	maxAudioURL       = 4096
	// maxLevelDataIssues bounds the issues one levelData produces (200 broken annotations would
	// otherwise make a 200-line answer).
	maxLevelDataIssues = 20
)

var (
	annotationIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	colorPattern        = regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`)
	toneMappings        = []string{"linear", "aces", "neutral"}
)

// levelDataChecker collects the issues of one levelData, each naming its field path.
type levelDataChecker struct {
	issues []string
}

func (c *levelDataChecker) issuef(path, format string, args ...any) {
	switch {
	case len(c.issues) < maxLevelDataIssues:
		c.issues = append(c.issues, path+": "+fmt.Sprintf(format, args...))
	case len(c.issues) == maxLevelDataIssues:
		c.issues = append(c.issues, "levelData: further problems omitted")
	}
}

// levelDataIssues checks a decoded levelData object against version 1 and returns its problems,
// each prefixed with its path ("levelData.annotations[2].title: ..."); none means valid.
func levelDataIssues(ld map[string]any) []string {
	c := &levelDataChecker{}
	if v, ok := ld["version"]; ok {
		if n, isNum := v.(float64); !isNum || n != levelDataVersion {
			c.issuef("levelData.version", "must be 1 (omit it for version 1)")
		}
	}
	c.object(ld, "camera", "levelData.camera", c.camera)
	if v, ok := ld["annotations"]; ok {
		c.annotations(v)
	}
	c.object(ld, "background", "levelData.background", func(path string, o map[string]any) {
		if s, ok := c.str(o, "color", path+".color", true); ok && !colorPattern.MatchString(s) {
			c.issuef(path+".color", "must be a colour '#rrggbb'")
		}
	})
	c.object(ld, "post", "levelData.post", func(path string, o map[string]any) {
		c.number(o, "exposure", path+".exposure", -maxExposure, maxExposure)
		if s, ok := c.str(o, "toneMapping", path+".toneMapping", false); ok && !slices.Contains(toneMappings, s) {
			c.issuef(path+".toneMapping", "must be one of 'linear', 'aces', 'neutral'")
		}
	})
	c.object(ld, "audio", "levelData.audio", func(path string, o map[string]any) {
		if s, ok := c.str(o, "url", path+".url", true); ok && (s == "" || len(s) > maxAudioURL) {
			c.issuef(path+".url", "must be 1-%d characters", maxAudioURL)
		}
		if v, ok := o["loop"]; ok {
			if _, isBool := v.(bool); !isBool {
				c.issuef(path+".loop", "must be a boolean")
			}
		}
		c.number(o, "volume", path+".volume", 0, 1)
	})
	c.object(ld, "orientation", "levelData.orientation", func(path string, o map[string]any) {
		v, ok := o["rotation"]
		if !ok {
			c.issuef(path+".rotation", "required")
			return
		}
		r, ok := c.vec3(v, path+".rotation")
		if !ok {
			return
		}
		for _, x := range r {
			if x < -maxOrientation || x > maxOrientation {
				c.issuef(path+".rotation", "each angle must be within -%d..%d degrees", maxOrientation, maxOrientation)
				return
			}
		}
	})
	return c.issues
}

// object runs check on o[name] when it is present: null or anything but an object is an issue.
func (c *levelDataChecker) object(o map[string]any, name, path string, check func(string, map[string]any)) {
	v, ok := o[name]
	if !ok {
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.issuef(path, "must be an object")
		return
	}
	check(path, m)
}

// camera checks {position, target, fov?}; position and target must differ, or the camera
// looks nowhere.
func (c *levelDataChecker) camera(path string, o map[string]any) {
	pos, okP := c.requiredVec3(o, "position", path)
	target, okT := c.requiredVec3(o, "target", path)
	if okP && okT && pos == target {
		c.issuef(path+".target", "must differ from position")
	}
	c.number(o, "fov", path+".fov", minFOV, maxFOV)
}

func (c *levelDataChecker) requiredVec3(o map[string]any, name, path string) ([3]float64, bool) {
	v, ok := o[name]
	if !ok {
		c.issuef(path+"."+name, "required")
		return [3]float64{}, false
	}
	return c.vec3(v, path+"."+name)
}

// vec3 reads an array of exactly three numbers. JSON has no NaN or infinity, and a number out
// of float64 range never decodes (parseLevelData), so every number here is finite.
func (c *levelDataChecker) vec3(v any, path string) ([3]float64, bool) {
	var out [3]float64
	a, ok := v.([]any)
	if !ok || len(a) != 3 {
		c.issuef(path, "must be an array of 3 numbers")
		return out, false
	}
	for i, x := range a {
		n, ok := x.(float64)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			c.issuef(path, "must be an array of 3 finite numbers")
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// number checks an optional finite number within [lo, hi].
func (c *levelDataChecker) number(o map[string]any, name, path string, lo, hi float64) {
	v, ok := o[name]
	if !ok {
		return
	}
	n, isNum := v.(float64)
	if !isNum || math.IsNaN(n) || math.IsInf(n, 0) {
		c.issuef(path, "must be a number")
		return
	}
	if n < lo || n > hi {
		c.issuef(path, "must be within %g..%g", lo, hi)
	}
}

// str reads an optional (or required) string.
func (c *levelDataChecker) str(o map[string]any, name, path string, required bool) (string, bool) {
	v, ok := o[name]
	if !ok {
		if required {
			c.issuef(path, "required")
		}
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		c.issuef(path, "must be a string")
		return "", false
	}
	return s, true
}

// annotations checks the hotspot list: at most 200, ids unique (the host's goToAnnotation and
// the viewer's 'annotation' event name them), each with a position and a title.
func (c *levelDataChecker) annotations(v any) {
	list, ok := v.([]any)
	if !ok {
		c.issuef("levelData.annotations", "must be an array")
		return
	}
	if len(list) > maxAnnotations {
		c.issuef("levelData.annotations", "must have at most %d entries, got %d", maxAnnotations, len(list))
		return
	}
	seen := make(map[string]int, len(list))
	for i, item := range list {
		path := fmt.Sprintf("levelData.annotations[%d]", i)
		a, ok := item.(map[string]any)
		if !ok {
			c.issuef(path, "must be an object")
			continue
		}
		if id, ok := c.str(a, "id", path+".id", true); ok {
			if !annotationIDPattern.MatchString(id) {
				c.issuef(path+".id", "must be 1-%d characters of letters, digits, '_' and '-'", maxAnnotationID)
			} else if j, dup := seen[id]; dup {
				c.issuef(path+".id", "duplicates annotations[%d].id", j)
			} else {
				seen[id] = i
			}
		}
		c.requiredVec3(a, "position", path)
		if t, ok := c.str(a, "title", path+".title", true); ok {
			if n := utf8.RuneCountInString(t); n < 1 || n > maxAnnotationName || strings.TrimSpace(t) == "" {
				c.issuef(path+".title", "must be 1-%d characters, not blank", maxAnnotationName)
			}
		}
		if t, ok := c.str(a, "text", path+".text", false); ok && utf8.RuneCountInString(t) > maxAnnotationText {
			c.issuef(path+".text", "must be at most %d characters", maxAnnotationText)
		}
		c.object(a, "camera", path+".camera", c.camera)
	}
}

// seedCamera applies a commit's initialCameraPosition and initialCameraRotation (pitch, yaw,
// roll in degrees) to a levelData without a camera: the camera stands at the position and looks
// one unit along the rotation's forward, -Z turned by pitch about X (positive looks up), then
// by yaw about Y; roll is ignored, fov left to the viewer. The result is version 1. A levelData
// that has a camera, or a commit without a position, is returned as it is.
func seedCamera(ld map[string]any, position, rotation []float64) map[string]any {
	if len(position) != 3 {
		return ld
	}
	if _, has := ld["camera"]; has {
		return ld
	}
	var pitch, yaw float64
	if len(rotation) == 3 {
		pitch, yaw = rotation[0]*math.Pi/180, rotation[1]*math.Pi/180
	}
	forward := [3]float64{-math.Sin(yaw) * math.Cos(pitch), math.Sin(pitch), -math.Cos(yaw) * math.Cos(pitch)}
	target := make([]any, 3)
	pos := make([]any, 3)
	for i := range 3 {
		pos[i] = position[i]
		target[i] = tidy(position[i] + forward[i])
	}
	out := make(map[string]any, len(ld)+2)
	for k, v := range ld {
		out[k] = v
	}
	out["version"] = float64(levelDataVersion)
	out["camera"] = map[string]any{"position": pos, "target": target}
	return out
}

// tidy rounds away the float noise of sin and cos (cos 90° is 6e-17, not 0) so that a seeded
// target reads as the numbers a person would write; 1e-9 is far below any scene's scale.
func tidy(x float64) float64 {
	r := math.Round(x*1e9) / 1e9
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return x // beyond ±1.8e299 the scaling overflows; such a value needs no tidying
	}
	if r == 0 {
		return 0 // no -0 in the answer
	}
	return r
}
