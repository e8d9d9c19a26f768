package session

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/roomproto"
	"github.com/splathost/splathost/internal/scenes"
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
		// CanEdit says whether this participant's edits are taken (the scene's owner, or a
		// session minted with coEdit); the others share presence and camera only.
		CanEdit bool `json:"canEdit"`
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
	// savedMsg is sent by the server alone, once a save of the scene is stored: the scene as
	// stored (the single-scene fetch's shape) and the draft's seq after it was cleared.
	savedMsg struct {
		Type  string `json:"type"`
		Splat any    `json:"splat"`
		Seq   int64  `json:"seq"`
	}
	errorMsg struct {
		Type    string   `json:"type"`
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Issues  []string `json:"issues,omitempty"`
	}
)

// pongFrame answers a client's {type:'ping'}.
var pongFrame = []byte(`{"type":"pong"}`)

// errorFrame is the {type:'error', code, message, issues?} frame of e: the REST envelope's
// message and issues (each naming its field), and its code (httpx.ErrorCode).
func errorFrame(e *apperr.Error) []byte {
	b, _ := json.Marshal(errorMsg{Type: "error", Code: httpx.ErrorCode(e), Message: e.Message, Issues: e.Issues})
	return b
}

// withIssues is e with issues.
func withIssues(e *apperr.Error, issues ...string) *apperr.Error {
	c := *e
	c.Issues = issues
	return &c
}

// errMessageTooLarge refuses a frame over roomproto.MaxMessage (closed with 1009).
var errMessageTooLarge = withIssues(apperr.New(413, "a message may be at most 64 KiB").With("code", "MESSAGE_TOO_LARGE"),
	"message: must be at most "+strconv.Itoa(roomproto.MaxMessage)+" bytes")

// Camera is a participant's camera (a presence marker): levelData v1's camera shape.
type Camera struct {
	Position []float64 `json:"position"`
	Target   []float64 `json:"target"`
	Fov      *float64  `json:"fov,omitempty"`
}

// Client message kinds; kindServerOnly is any type only the server sends.
const (
	kindEdit       = "edit"
	kindCamera     = "camera"
	kindPing       = "ping"
	kindServerOnly = "server-only"
)

// serverTypes are the messages only the server sends: a client's is refused, never relayed.
// 'published' is a save too (of visibility), announced as 'saved'.
var serverTypes = []string{"welcome", "join", "leave", "saved", "published", "pong", "error"}

// inbound is a validated client message.
type inbound struct {
	kind string
	// typ is the message's type as sent (a server-only one, for the refusal).
	typ string
	// fields is an edit's fields (compact JSON object).
	fields json.RawMessage
	camera *Camera
}

// editFields are the fields an edit may carry: what the editor's PATCH saves.
var editFields = []string{"title", "description", "visibility", "allowComments", "allowReactions", "levelData"}

// parseInbound validates one client frame as a REST body is validated: the shared decoder
// (httpx.DecodeObject), unknown types and fields refused, each field of its type and within its
// bounds, every number finite; any problem is a 400 whose issues name the field (closed with
// 4400). A server-only type is returned as kindServerOnly, for the caller to refuse.
func parseInbound(frame []byte) (*inbound, error) {
	if depth := jsonDepth(frame); depth > roomMaxDepth {
		return nil, apperr.Invalid("malformed message", "message: must not nest deeper than "+strconv.Itoa(roomMaxDepth)+" levels")
	}
	f, err := httpx.DecodeObject(frame, false)
	if err != nil {
		return nil, err
	}
	f.Require("type")
	typ, _ := f.String("type", 1, 64)
	in := &inbound{kind: typ, typ: typ}
	switch {
	case typ == kindEdit:
		f.Only("type", "fields")
		f.Require("fields")
		f.Object("fields", parseEditFields)
		if raw, ok := f.Raw("fields"); ok {
			in.fields = compact(raw)
		}
	case typ == kindCamera:
		f.Only("type", "camera")
		f.Require("camera")
		f.Object("camera", func(g *httpx.Fields) { in.camera = parseCamera(g) })
	case typ == kindPing:
		f.Only("type")
	case slices.Contains(serverTypes, typ):
		return &inbound{kind: kindServerOnly, typ: typ}, nil
	case typ != "":
		f.Issuef("type: must be one of 'edit', 'camera', 'ping'")
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return in, nil
}

// parseEditFields checks an edit's fields: at least one, each of the type the editor's PATCH
// takes, title and description within the scene's bounds. The values' other rules (a title
// not blank, levelData v1) are the save's: a draft may hold an empty title while someone types.
func parseEditFields(g *httpx.Fields) {
	if g.Len() == 0 {
		g.Issuef("at least one of %s is required", strings.Join(editFields, ", "))
	}
	g.Only(editFields...)
	for _, name := range editFields {
		g.NotNull(name)
	}
	g.String("title", 0, scenes.MaxTitle)
	g.String("description", 0, scenes.MaxDescription)
	g.Enum("visibility", "private", "public")
	g.Bool("allowComments")
	g.Bool("allowReactions")
	// An object of the levelData keys to replace.
	g.Object("levelData", func(*httpx.Fields) {})
}

// parseCamera checks a camera: position and target of three finite numbers, fov 1-179 degrees.
func parseCamera(g *httpx.Fields) *Camera {
	g.Only("position", "target", "fov")
	g.Require("position", "target")
	var cam Camera
	for _, v := range []struct {
		name string
		dst  *[]float64
	}{{"position", &cam.Position}, {"target", &cam.Target}} {
		if raw, ok := g.Raw(v.name); ok && !g.IsNull(v.name) {
			if json.Unmarshal(raw, v.dst) != nil || !vec3(*v.dst) {
				g.Issuef("%s: must be [x, y, z] of finite numbers", v.name)
			}
		}
	}
	if raw, ok := g.Raw("fov"); ok && !g.IsNull("fov") {
		var fov float64
		if json.Unmarshal(raw, &fov) != nil || fov < 1 || fov > 179 {
			g.Issuef("fov: must be a number of degrees, 1-179")
		}
		cam.Fov = &fov
	}
	return &cam
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
