package session

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/roomproto"
)

// The multiplayer room's wire protocol (docs/embeds.md, "Multiplayer room"): JSON text frames.

// Limits of the room beyond roomproto's (contract item 10 and the decisions of issue 13).
const (
	// roomNameRunes is where a shown name is cut (spec: "truncated to 32 in-room").
	roomNameRunes = 32
	// roomMaxDraft bounds a room's merged draft: a levelData (256 KiB, the scene's own bound)
	// plus the other fields. An edit that would make it larger is refused (1009): the draft
	// could never be saved anyway.
	roomMaxDraft = 320 << 10
	// roomMaxDepth bounds the nesting of a client message: levelData is bounded to 64 levels
	// when saved, and Postgres' jsonb parser is recursive.
	roomMaxDepth = 70
)

// Peer is a participant as the protocol shows it.
type Peer struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	AvatarURL *string `json:"avatarUrl"`
	Colour    string  `json:"colour"`
	Guest     bool    `json:"guest"`
}

// Server messages. Their field order is the protocol's; every one is a JSON object with type.
type (
	welcomeMsg struct {
		Type  string          `json:"type"`
		Self  Peer            `json:"self"`
		Peers []Peer          `json:"peers"`
		Draft json.RawMessage `json:"draft"`
		Seq   int64           `json:"seq"`
	}
	joinMsg struct {
		Type string `json:"type"`
		Peer Peer   `json:"peer"`
	}
	leaveMsg struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	editMsg struct {
		Type   string          `json:"type"`
		From   string          `json:"from"`
		Fields json.RawMessage `json:"fields"`
		Seq    int64           `json:"seq"`
	}
	cameraMsg struct {
		Type   string  `json:"type"`
		From   string  `json:"from"`
		Camera *Camera `json:"camera"`
	}
	savedMsg struct {
		Type  string          `json:"type"`
		From  string          `json:"from"`
		Splat json.RawMessage `json:"splat"`
	}
)

// pongFrame answers a client's {type:'ping'}.
var pongFrame = []byte(`{"type":"pong"}`)

// Camera is a participant's camera (a presence marker): levelData v1's camera shape.
type Camera struct {
	Position []float64 `json:"position"`
	Target   []float64 `json:"target"`
	Fov      *float64  `json:"fov,omitempty"`
}

// Client message kinds.
const (
	kindEdit   = "edit"
	kindCamera = "camera"
	kindSaved  = "saved"
	kindPing   = "ping"
)

// inbound is a validated client message.
type inbound struct {
	kind string
	// fields is an edit's fields (compact JSON object).
	fields json.RawMessage
	camera *Camera
	// splat is a saved message's scene (compact JSON object), passed on as the saver got it.
	splat json.RawMessage
}

// editFields are the fields an edit may carry: what the editor's PATCH saves.
var editFields = []string{"title", "description", "visibility", "allowComments", "allowReactions", "levelData"}

// parseInbound validates one client frame; any problem is a 400 (closed with 4400).
func parseInbound(frame []byte) (*inbound, error) {
	if depth := jsonDepth(frame); depth > roomMaxDepth {
		return nil, apperr.Invalid("malformed message", "message: must not nest deeper than "+strconv.Itoa(roomMaxDepth)+" levels")
	}
	f, err := httpx.DecodeObject(frame, false)
	if err != nil {
		return nil, err
	}
	f.Require("type")
	kind, _ := f.Enum("type", kindEdit, kindCamera, kindSaved, kindPing)
	in := &inbound{kind: kind}
	switch kind {
	case kindEdit:
		f.Only("type", "fields")
		f.Require("fields")
		f.Object("fields", parseEditFields)
		if raw, ok := f.Raw("fields"); ok {
			in.fields = compact(raw)
		}
	case kindCamera:
		f.Only("type", "camera")
		f.Require("camera")
		if raw, ok := f.Raw("camera"); ok && !f.IsNull("camera") {
			cam, problem := parseCamera(raw)
			if problem != "" {
				f.Issuef("camera: %s", problem)
			}
			in.camera = cam
		}
	case kindSaved:
		f.Only("type", "splat")
		f.Require("splat")
		if f.Object("splat", func(*httpx.Fields) {}) {
			raw, _ := f.Raw("splat")
			in.splat = compact(raw)
		}
	case kindPing:
		f.Only("type")
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return in, nil
}

// parseEditFields checks an edit's fields: at least one, each of the type the editor's PATCH
// takes. The values' own rules (title length, levelData v1) are the save's: a draft may hold
// an empty title while someone types.
func parseEditFields(g *httpx.Fields) {
	if g.Len() == 0 {
		g.Issuef("at least one of %s is required", strings.Join(editFields, ", "))
	}
	g.Only(editFields...)
	for _, name := range editFields {
		g.NotNull(name)
	}
	g.String("title", 0, roomproto.MaxMessage)
	g.String("description", 0, roomproto.MaxMessage)
	g.Enum("visibility", "private", "public")
	g.Bool("allowComments")
	g.Bool("allowReactions")
	// An object of the levelData keys to replace.
	g.Object("levelData", func(*httpx.Fields) {})
}

// parseCamera checks a camera: position and target of three finite numbers, fov 1-179.
func parseCamera(raw json.RawMessage) (*Camera, string) {
	f, err := httpx.DecodeObject(raw, false)
	if err != nil {
		return nil, "must be a JSON object"
	}
	f.Only("position", "target", "fov")
	if f.Err() != nil {
		return nil, "only position, target and fov are allowed"
	}
	var cam Camera
	if err := json.Unmarshal(raw, &cam); err != nil {
		return nil, "position and target must be [x, y, z] numbers, fov a number"
	}
	if !vec3(cam.Position) || !vec3(cam.Target) {
		return nil, "position and target must be [x, y, z] of finite numbers"
	}
	if cam.Fov != nil && (*cam.Fov < 1 || *cam.Fov > 179) {
		return nil, "fov must be 1-179 degrees"
	}
	return &cam, ""
}

func vec3(v []float64) bool {
	if len(v) != 3 {
		return false
	}
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// compact is raw without insignificant whitespace (raw is valid JSON).
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// jsonDepth is the deepest nesting of objects and arrays in b, strings skipped; it looks at
// bytes only, so it bounds what a decoder will recurse into before any decoding.
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// shownName is a session's user.name as the room shows it: control and bidirectional-override
// characters removed (they could hide or reorder what others read), trimmed, cut to 32
// characters. "" means the participant is a guest.
func shownName(name string) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.TrimSpace(name) {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			continue
		}
		if n == roomNameRunes {
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// guestName is the name of guest number n.
func guestName(n int) string { return "Guest " + strconv.Itoa(n) }

// lowestFree is the lowest positive number not in used (guest numbering).
func lowestFree(used map[int]bool) int {
	n := 1
	for used[n] {
		n++
	}
	return n
}

// palette are the participants' colours: distinct hues readable on the editor's dark and light
// panels. A room hands out the first one no live participant has; past 16 participants a
// colour repeats, chosen from the participant id.
var palette = []string{
	"#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#bfef45",
	"#fabed4", "#469990", "#dcbeff", "#9a6324", "#ffe119", "#800000", "#aaffc3", "#000075",
}

// pickColour is the first palette colour not in used, else one derived from id.
func pickColour(used map[string]bool, id string) string {
	for _, c := range palette {
		if !used[c] {
			return c
		}
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return palette[h.Sum32()%uint32(len(palette))]
}
