package scene

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/uploadrules"
)

// require400 fails unless err is a 400 *apperr.Error naming at least one issue.
func require400(t *testing.T, err error) *apperr.Error {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) {
		t.Fatalf("error is %T, not *apperr.Error: %v", err, err)
	}
	if e.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %v", e.Status, err)
	}
	if len(e.Issues) == 0 {
		t.Fatalf("400 without issues: %v", err)
	}
	for _, issue := range e.Issues {
		if issue == "" {
			t.Fatalf("empty issue in %q", e.Issues)
		}
	}
	return e
}

func finite3(v []float64) bool {
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

// FuzzParseCommit asserts that parseCommit never panics, that every failure is a 400 naming its
// problems, and that every accepted body satisfies the commit rules.
func FuzzParseCommit(f *testing.F) {
	const u = "https://assets.example/i/a/u/b/f/c/scene.splat"
	for _, seed := range []string{
		``,
		`{}`,
		`[]`,
		`null`,
		`"x"`,
		`{`,
		`{} {}`,
		`{"title":"t","splatUrl":"` + u + `"}`,
		`{"title":"  Hello  ","description":"d","visibility":"public","splatType":"file","splatUrl":"` + u + `",
		  "imageUrl":"` + u + `","thumbnailDepthUrl":"` + u + `","initialCameraPosition":[0,1,2],"initialCameraRotation":[0.5,-1e3,3]}`,
		`{"title":"t","splatType":"lod","splatUrl":"` + u + `","lodFolderKey":"i/a/u/b/l/c"}`,
		`{"title":"t","splatType":"lod","splatUrl":"` + u + `"}`,
		`{"title":"t","splatType":"file","splatUrl":"` + u + `","lodFolderKey":"k"}`,
		`{"title":"t","splatUrl":"` + u + `","lodFolderKey":null,"imageUrl":null,"thumbnailDepthUrl":null}`,
		`{"title":"t","splatUrl":"` + u + `","thumbnailDepthUrl":"` + u + `"}`,
		`{"title":"   ","splatUrl":""}`,
		`{"title":null,"splatUrl":null,"visibility":null,"splatType":null}`,
		`{"title":1,"splatUrl":true,"visibility":"secret","splatType":"zip","description":[]}`,
		`{"title":"t","splatUrl":"x","initialCameraPosition":[1,2],"initialCameraRotation":[1,2,3,4]}`,
		`{"title":"t","splatUrl":"x","initialCameraPosition":[1e999,0,0],"initialCameraRotation":"abc"}`,
		`{"title":"t","splatUrl":"x","initialCameraPosition":{"x":1},"initialCameraRotation":[null,null,null]}`,
		`{"title":"t","splatUrl":"x","unknown":1,"\u0000":2}`,
		"{\"title\":\"\xff\xfe\",\"splatUrl\":\"\xc0\"}",
		`{"title":"` + strings.Repeat("é", 201) + `","splatUrl":"x"}`,
		`{"title":"t","title":"u","splatUrl":"x"}`,
		`{"title":"t","splatUrl":"x","levelData":{"camera":{"position":[0,1,2]}}}`,
		`{"title":"t","splatUrl":"x","levelData":[1]}`,
		`{"title":"t","splatUrl":"x","levelData":{"a":"\u0000"}}`,
		`{"title":"t","splatUrl":"x","levelData":{"a":1e400}}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, editor bool) {
		r, err := parseCommit(body, editor)
		if err != nil {
			require400(t, err)
			if r != nil {
				t.Fatal("request returned with an error")
			}
			return
		}
		if r != nil && r.levelData != nil && !editor {
			t.Fatal("levelData accepted on the v1 commit")
		}
		if r == nil {
			t.Fatal("nil request without an error")
		}
		if n := utf8.RuneCountInString(r.title); n < 1 || n > maxTitle || strings.TrimSpace(r.title) != r.title {
			t.Fatalf("title %q accepted", r.title)
		}
		if utf8.RuneCountInString(r.description) > maxDescription {
			t.Fatalf("description of %d characters accepted", utf8.RuneCountInString(r.description))
		}
		if r.visibility != "private" && r.visibility != "public" {
			t.Fatalf("visibility %q accepted", r.visibility)
		}
		switch r.splatType {
		case "file":
			if r.lodFolderKey != "" {
				t.Fatalf("lodFolderKey %q accepted for a file scene", r.lodFolderKey)
			}
		case "lod":
			if r.lodFolderKey == "" {
				t.Fatal("lod scene without lodFolderKey accepted")
			}
		default:
			t.Fatalf("splatType %q accepted", r.splatType)
		}
		if r.splatURL == "" {
			t.Fatal("empty splatUrl accepted")
		}
		if r.depthURL != "" && r.imageURL == "" {
			t.Fatal("thumbnailDepthUrl without imageUrl accepted")
		}
		for _, v := range [][]float64{r.cameraPosition, r.cameraRotation} {
			if v != nil && !finite3(v) {
				t.Fatalf("camera vector %v accepted", v)
			}
		}
	})
}

// lodSeed is a files array for every file of a fixture LOD folder.
func lodSeed(n int) []byte {
	folder := fixtures.LODFolder(n)
	paths := make([]string, 0, len(folder))
	for p := range folder {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	files := make([]lodUpload, len(paths))
	for i, p := range paths {
		files[i] = lodUpload{RelativePath: p, ContentType: lodTypes[path.Ext(p)], FileSize: int64(len(folder[p]))}
	}
	b, err := json.Marshal(files)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzDecodeLODFiles runs the lod-folder request's files array through decodeLODFiles and then
// validateLOD, as the handler does: neither may panic, decoding fails only with a 400 naming its
// problems, validation answers at most maxIssues problems plus the "omitted" line, and a folder
// it accepts obeys every rule of the spec.
func FuzzDecodeLODFiles(f *testing.F) {
	manifest := `{"relativePath":"lod-meta.json","contentType":"application/json","fileSize":10}`
	cell := `{"relativePath":"0_0/means_l.webp","contentType":"image/webp","fileSize":10}`
	var many []string
	for i := 0; i < 30; i++ {
		many = append(many, `{"relativePath":"../x`+strings.Repeat("a", i)+`.png","contentType":"image/png","fileSize":0}`)
	}
	var manyBadItems []string
	for i := 0; i < 30; i++ {
		manyBadItems = append(manyBadItems, `{"relativePath":1,"contentType":2,"fileSize":"3"}`)
	}
	f.Add(lodSeed(1))
	f.Add(lodSeed(10))
	for _, seed := range []string{
		``,
		`null`,
		`{}`,
		`[]`,
		`[null]`,
		`[1,"a",[],{}]`,
		`[` + manifest + `]`,
		`[` + manifest + `,` + cell + `]`,
		`[` + manifest + `,` + manifest + `]`,
		`[` + cell + `,` + cell + `]`,
		`[` + manifest + `,{"relativePath":"/abs.webp","contentType":"image/webp","fileSize":1}]`,
		`[` + manifest + `,{"relativePath":"a/../b.webp","contentType":"image/webp","fileSize":1}]`,
		`[` + manifest + `,{"relativePath":"a//b.webp","contentType":"image/webp","fileSize":1}]`,
		`[` + manifest + `,{"relativePath":"./b.webp","contentType":"image/webp","fileSize":1}]`,
		`[` + manifest + `,{"relativePath":"a b.webp","contentType":"image/webp","fileSize":1}]`,
		`[` + manifest + `,{"relativePath":"x.WEBP","contentType":"image/webp","fileSize":52428800}]`,
		`[` + manifest + `,{"relativePath":"x.webp","contentType":"image/webp","fileSize":52428801}]`,
		`[` + manifest + `,{"relativePath":"x.webp","contentType":"image/webp","fileSize":9223372036854775807}]`,
		`[` + manifest + `,{"relativePath":"x.webp","contentType":"image/webp","fileSize":-1}]`,
		`[` + manifest + `,{"relativePath":"x.webp","contentType":"image/webp","fileSize":1.5}]`,
		`[` + manifest + `,{"relativePath":"x.webp","contentType":"image/webp","fileSize":1e3}]`,
		`[` + manifest + `,{"relativePath":"x.webp","contentType":null,"fileSize":null,"extra":true}]`,
		`[` + manifest + `,{"relativePath":"é.webp","contentType":"image/webp","fileSize":1}]`,
		"[{\"relativePath\":\"\xff.webp\",\"contentType\":\"image/webp\",\"fileSize\":1}]",
		`[` + strings.Join(many, ",") + `]`,
		`[` + strings.Join(manyBadItems, ",") + `]`,
		`[` + manifest + `,{"relativePath":"` + strings.Repeat("a/", 256) + `x.webp","contentType":"image/webp","fileSize":1}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		files, err := decodeLODFiles(raw)
		if err != nil {
			require400(t, err)
			if files != nil {
				t.Fatal("files returned with an error")
			}
			return
		}
		issues := validateLOD(files)
		if len(issues) > maxIssues+1 {
			t.Fatalf("%d issues, at most %d expected", len(issues), maxIssues+1)
		}
		if len(issues) == maxIssues+1 && issues[maxIssues] != "files: further problems omitted" {
			t.Fatalf("issue %d is %q, want the omitted line", maxIssues, issues[maxIssues])
		}
		if len(issues) > 0 {
			for _, issue := range issues {
				if !strings.HasPrefix(issue, "files") {
					t.Fatalf("issue %q does not name its field", issue)
				}
			}
			// The handler answers exactly these issues in a 400.
			require400(t, apperr.Invalid("validation failed", issues...))
			return
		}
		// Accepted: the folder obeys every rule the signed keys depend on.
		if len(files) < uploadrules.MinLODFiles || len(files) > uploadrules.MaxLODFiles {
			t.Fatalf("%d files accepted", len(files))
		}
		seen := map[string]bool{}
		var total int64
		manifestSeen, cellSeen := false, false
		for _, file := range files {
			if p := relativePathProblem(file.RelativePath); p != "" {
				t.Fatalf("path %q accepted: %s", file.RelativePath, p)
			}
			if seen[file.RelativePath] {
				t.Fatalf("duplicate path %q accepted", file.RelativePath)
			}
			seen[file.RelativePath] = true
			ext := strings.ToLower(path.Ext(file.RelativePath))
			if want, ok := lodTypes[ext]; !ok || file.ContentType != want {
				t.Fatalf("%q with content type %q accepted", file.RelativePath, file.ContentType)
			}
			if file.FileSize < 1 || file.FileSize > MaxLODFileBytes {
				t.Fatalf("file size %d accepted", file.FileSize)
			}
			total += file.FileSize
			manifestSeen = manifestSeen || file.RelativePath == uploadrules.LODManifest
			cellSeen = cellSeen || ext == ".webp"
		}
		if !manifestSeen || !cellSeen || total > MaxLODFolderBytes {
			t.Fatalf("folder accepted without manifest (%v), cell (%v) or over size (%d)", manifestSeen, cellSeen, total)
		}
	})
}

// safePath is the spec's rule for a LOD relativePath, written independently of
// relativePathProblem: segments of letters, digits, '.', '_', '-' joined by '/', none of them
// '.' or '..'.
var safePath = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)

func pathIsSafe(p string) bool {
	if len(p) < 1 || len(p) > maxRelativePath || !safePath.MatchString(p) {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// FuzzRelativePathProblem asserts relativePathProblem never panics, accepts exactly the paths of
// the spec's rule, and that an accepted path cannot leave the folder it is joined under.
func FuzzRelativePathProblem(f *testing.F) {
	for _, seed := range []string{
		"", "lod-meta.json", "0_0/means_l.webp", "a/b/c.webp", "..", ".", "../x", "a/../b", "a/..", "./a",
		"a/./b", "/abs", "a//b", "a/", "...", "a/...", ".hidden", "a\\..\\b", "a b", "é", "a\x00b", "%2e%2e/x",
		"a/b/", strings.Repeat("a", 512), strings.Repeat("a", 513), strings.Repeat("a/", 255) + "b",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		problem := relativePathProblem(p)
		if accepted, want := problem == "", pathIsSafe(p); accepted != want {
			t.Fatalf("relativePathProblem(%q) = %q, the spec's rule says accepted=%v", p, problem, want)
		}
		if problem != "" {
			return
		}
		if strings.HasPrefix(p, "/") {
			t.Fatalf("absolute path %q accepted", p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == ".." || seg == "." || seg == "" {
				t.Fatalf("path %q with segment %q accepted", p, seg)
			}
		}
		for i := 0; i < len(p); i++ {
			c := p[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
				t.Fatalf("path %q with byte %q accepted", p, c)
			}
		}
		// Joined under a ticket prefix, the key stays under it and is already clean.
		const prefix = "i/x/u/y/l/z/"
		if path.Clean(p) != p || !strings.HasPrefix(path.Clean(prefix+p), prefix) {
			t.Fatalf("path %q escapes or is not clean under %s", p, prefix)
		}
	})
}

// FuzzSniff asserts sniff never panics on any extension, head and size, gives a reason whenever
// it refuses, is deterministic, ignores the extension's case, and never accepts a size smaller
// than the head it was given.
func FuzzSniff(f *testing.F) {
	lod := fixtures.LODFolder(4)
	for _, s := range []struct {
		ext  string
		data []byte
	}{
		{".ply", fixtures.PLY(1)},
		{".splat", fixtures.Splat(2)},
		{".ksplat", fixtures.KSplat(2)},
		{".sog", fixtures.SOG(2)},
		{".webp", fixtures.WebP(2, 2)},
		{".json", lod[uploadrules.LODManifest]},
		{".webp", lod["0_0/means_l.webp"]},
		{".jpg", fixtures.JPEG(2, 2)},
		{".jpeg", fixtures.JPEG(2, 2)},
		{".png", fixtures.PNG(2, 2)},
		{".PLY", []byte("ply\r\nformat ascii 1.0\n")},
		{".json", []byte("\xef\xbb\xbf  [1]")},
		{".splat", nil},
		{".ksplat", make([]byte, 24)},
		{".webp", []byte("RIFF\xff\xff\xff\xffWEBPVP8X")},
		{".gif", []byte("GIF89a")},
		{"", nil},
	} {
		f.Add(s.ext, s.data[:min(len(s.data), sniffHeadSize)], int64(len(s.data)))
	}
	f.Add(".ksplat", []byte("\x00\x01\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00"), int64(math.MaxInt64))
	f.Add(".splat", make([]byte, 64), int64(-32))
	f.Add(".sog", []byte("PK\x03\x04"), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, ext string, head []byte, size int64) {
		err := sniff(ext, head, size)
		if err != nil && err.Error() == "" {
			t.Fatal("refusal without a reason")
		}
		if err == nil && size < int64(len(head)) {
			t.Fatalf("size %d accepted with a head of %d bytes", size, len(head))
		}
		if again := sniff(ext, head, size); (again == nil) != (err == nil) {
			t.Fatal("sniff is not deterministic")
		}
		if upper := sniff(strings.ToUpper(ext), head, size); (upper == nil) != (err == nil) {
			t.Fatalf("sniff(%q) and sniff(%q) disagree", ext, strings.ToUpper(ext))
		}
		if _, known := sniffers[strings.ToLower(ext)]; !known && err == nil {
			t.Fatalf("unknown extension %q accepted", ext)
		}
		// Commit passes at most sniffHeadSize bytes; that must never panic either.
		_ = sniff(ext, head[:min(len(head), sniffHeadSize)], size)
	})
}

// FuzzParseScenePatch asserts parseScenePatch (the PATCH /api/v1/splats/{id} body) never panics,
// fails only with a 400 naming its problems, and accepts only patches that obey the rules.
func FuzzParseScenePatch(f *testing.F) {
	for _, seed := range []string{
		``,
		`{}`,
		`[]`,
		`null`,
		`{`,
		`{"title":"x"} 1`,
		`{"title":"  Hello  ","description":"","visibility":"public","allowEmbed":false,"allowClone":true,"allowComments":false,"allowReactions":true}`,
		`{"featured":true}`,
		`{"featured":false,"title":"x"}`,
		`{"featured":null}`,
		`{"title":"   "}`,
		`{"title":null,"description":null,"visibility":null,"allowEmbed":null}`,
		`{"title":1,"description":2,"visibility":"secret","allowEmbed":"true","allowClone":1}`,
		`{"title":"` + strings.Repeat("é", 201) + `"}`,
		`{"description":"` + strings.Repeat("d", 2001) + `"}`,
		`{"unknown":1}`,
		"{\"title\":\"\xff\xfe\"}",
		`{"featured":true,"featured":true}`,
		`{"levelData":{"camera":{"position":[0,1,2]}}}`,
		`{"levelData":null,"title":"x"}`,
		`{"levelData":"x"}`,
		`{"levelData":{"a":{"b":{"c":"\u0000"}}}}`,
		`{"imageUrl":"https://assets.example/i/a/u/b/m/c/thumbnail.jpg"}`,
		`{"imageUrl":null}`,
		`{"imageUrl":""}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, editor bool) {
		p, err := parseScenePatch(body, editor)
		if err != nil {
			if e := apperr.From(err); editor && e.Status == http.StatusForbidden {
				return // featured from an embed session
			}
			require400(t, err)
			if p != nil {
				t.Fatal("patch returned with an error")
			}
			return
		}
		if p == nil {
			t.Fatal("nil patch without an error")
		}
		if (p.hasLevelData || p.imageURL != nil) && !editor || p.featured != nil && editor {
			t.Fatal("a field of the other PATCH accepted")
		}
		others := []bool{p.title != nil, p.description != nil, p.visibility != nil, p.allowEmbed != nil,
			p.allowClone != nil, p.allowComments != nil, p.allowReactions != nil, p.hasLevelData, p.imageURL != nil}
		set := 0
		for _, o := range others {
			if o {
				set++
			}
		}
		if p.featured != nil && set > 0 {
			t.Fatal("featured accepted together with other fields")
		}
		if p.featured == nil && set == 0 {
			t.Fatal("patch without any field accepted")
		}
		if p.title != nil {
			if n := utf8.RuneCountInString(*p.title); n < 1 || n > maxTitle || strings.TrimSpace(*p.title) != *p.title {
				t.Fatalf("title %q accepted", *p.title)
			}
		}
		if p.description != nil && utf8.RuneCountInString(*p.description) > maxDescription {
			t.Fatalf("description of %d characters accepted", utf8.RuneCountInString(*p.description))
		}
		if p.visibility != nil && *p.visibility != "private" && *p.visibility != "public" {
			t.Fatalf("visibility %q accepted", *p.visibility)
		}
	})
}

// FuzzLevelDataIssues asserts the levelData v1 rules never panic on any decoded JSON object,
// name every problem under levelData, and accept only values whose known fields have the v1
// shapes (the typed decode below is what a reader of levelData relies on).
func FuzzLevelDataIssues(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"version":1,"camera":{"position":[0,1,5],"target":[0,0,0],"fov":60}}`,
		`{"annotations":[{"id":"a","position":[1,2,3],"title":"t","text":"x","camera":{"position":[0,0,1],"target":[0,0,0]}}]}`,
		`{"annotations":[{"id":"a","position":[1,2,3],"title":"t"},{"id":"a","position":[1,2,3],"title":"t"}]}`,
		`{"background":{"color":"#00ff00"},"post":{"exposure":-10,"toneMapping":"neutral"}}`,
		`{"audio":{"url":"https://x/a.ogg","loop":false,"volume":1},"orientation":{"rotation":[180,0,0]}}`,
		`{"camera":{"position":[1,1,1],"target":[1,1,1]}}`,
		`{"camera":null,"annotations":null,"post":[],"audio":"x","orientation":{"rotation":"r"}}`,
		`{"version":"1","camera":{"position":[1e308,-1e308,0],"target":[0,0,0],"fov":179.5}}`,
		`{"other":{"deep":[1,2,{"x":null}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var ld map[string]any
		if json.Unmarshal(body, &ld) != nil || ld == nil {
			return
		}
		issues := levelDataIssues(ld)
		if len(issues) > maxLevelDataIssues+1 {
			t.Fatalf("%d issues", len(issues))
		}
		for _, issue := range issues {
			if !strings.HasPrefix(issue, "levelData") || !strings.Contains(issue, ": ") {
				t.Fatalf("issue %q does not name its field", issue)
			}
		}
		if len(issues) > 0 {
			return
		}
		type camera struct {
			Position *[3]float64 `json:"position"`
			Target   *[3]float64 `json:"target"`
			FOV      *float64    `json:"fov"`
		}
		var v1 struct {
			Version     *float64 `json:"version"`
			Camera      *camera  `json:"camera"`
			Annotations []struct {
				ID       string      `json:"id"`
				Position *[3]float64 `json:"position"`
				Title    string      `json:"title"`
				Text     string      `json:"text"`
				Camera   *camera     `json:"camera"`
			} `json:"annotations"`
			Background *struct {
				Color string `json:"color"`
			} `json:"background"`
			Post *struct {
				Exposure    float64 `json:"exposure"`
				ToneMapping string  `json:"toneMapping"`
			} `json:"post"`
			Audio *struct {
				URL    string   `json:"url"`
				Loop   bool     `json:"loop"`
				Volume *float64 `json:"volume"`
			} `json:"audio"`
			Orientation *struct {
				Rotation *[3]float64 `json:"rotation"`
			} `json:"orientation"`
		}
		// The known fields of an accepted levelData decode into their types: no string where a
		// number is read, no 4-element vector, no object where an array is. encoding/json
		// matches names without regard to case, the rules (and the viewer) exactly, so keys that
		// only differ in case from a v1 name are unknown keys and dropped first.
		exact, err := json.Marshal(exactKeys(ld))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(exact, &v1); err != nil {
			t.Fatalf("accepted levelData does not decode as v1: %v", err)
		}
		checkCamera := func(c *camera) {
			if c == nil {
				return
			}
			if c.Position == nil || c.Target == nil || *c.Position == *c.Target {
				t.Fatal("a camera without a direction accepted")
			}
			if c.FOV != nil && (*c.FOV < minFOV || *c.FOV > maxFOV) {
				t.Fatalf("fov %v accepted", *c.FOV)
			}
		}
		if v1.Version != nil && *v1.Version != 1 {
			t.Fatalf("version %v accepted", *v1.Version)
		}
		checkCamera(v1.Camera)
		if len(v1.Annotations) > maxAnnotations {
			t.Fatalf("%d annotations accepted", len(v1.Annotations))
		}
		ids := map[string]bool{}
		for _, a := range v1.Annotations {
			if !annotationIDPattern.MatchString(a.ID) || ids[a.ID] || a.Position == nil ||
				utf8.RuneCountInString(a.Title) < 1 || utf8.RuneCountInString(a.Title) > maxAnnotationName ||
				utf8.RuneCountInString(a.Text) > maxAnnotationText {
				t.Fatalf("annotation %+v accepted", a)
			}
			ids[a.ID] = true
			checkCamera(a.Camera)
		}
		if v1.Background != nil && !colorPattern.MatchString(v1.Background.Color) {
			t.Fatalf("colour %q accepted", v1.Background.Color)
		}
		if p := v1.Post; p != nil && (math.Abs(p.Exposure) > maxExposure || p.ToneMapping != "" && !slices.Contains(toneMappings, p.ToneMapping)) {
			t.Fatalf("post %+v accepted", *p)
		}
		if a := v1.Audio; a != nil && (a.URL == "" || a.Volume != nil && (*a.Volume < 0 || *a.Volume > 1)) {
			t.Fatalf("audio %+v accepted", *a)
		}
		if o := v1.Orientation; o != nil {
			if o.Rotation == nil {
				t.Fatal("orientation without rotation accepted")
			}
			for _, x := range o.Rotation {
				if math.Abs(x) > maxOrientation {
					t.Fatalf("rotation %v accepted", *o.Rotation)
				}
			}
		}
	})
}

// levelDataNames are the names levelData v1 gives meaning to, at any depth.
var levelDataNames = []string{"version", "camera", "annotations", "background", "post", "audio", "orientation",
	"position", "target", "fov", "id", "title", "text", "color", "exposure", "toneMapping", "url", "loop", "volume", "rotation"}

// exactKeys returns v without the object keys that equal a levelData name only when case is
// ignored.
func exactKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if !slices.ContainsFunc(levelDataNames, func(n string) bool { return n != k && strings.EqualFold(n, k) }) {
				out[k] = exactKeys(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = exactKeys(x)
		}
		return out
	}
	return v
}
