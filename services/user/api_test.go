package user

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/customers"
	"github.com/splathost/splathost/internal/httpx"
)

const (
	id1 = "0123456789abcdef01234567"
	id2 = "89abcdef0123456789abcdef"

	issueLimitBytes  = "limitBytes: must be an integer >= 0"
	issueMaxSplats   = "maxSplats: must be an integer >= 0"
	issueStatus      = "status: must be one of 'active', 'inactive'"
	issueBilling     = "billingState: must be one of 'active', 'suspended', 'canceled'"
	issueDisplayName = "displayName: must be 1-120 characters"
	issueAvatarLen   = "avatarUrl: must be 1-2048 characters"
	issueAvatarURL   = "avatarUrl: must be an absolute http(s) URL"
	issueEmailLen    = "emailHash: must be 8-128 characters"
	issueEmailChars  = "emailHash: must not contain spaces or control characters"
	issueMetaObject  = "metadata: must be an object"
	issueMetaKeys    = "metadata: at most 20 keys"
	issueMetaBytes   = "metadata: at most 4096 bytes serialized"
	issueKeepID      = "must be a 24-character hexadecimal scene id"
)

// parse400 parses body and asserts a 400 *apperr.Error; it returns the issues.
func parse400(t *testing.T, body string) *apperr.Error {
	t.Helper()
	p, err := parseCustomerPatch([]byte(body))
	require.Nil(t, p)
	require.Error(t, err)
	var e *apperr.Error
	require.True(t, errors.As(err, &e), "want *apperr.Error, got %T", err)
	require.Equal(t, http.StatusBadRequest, e.Status)
	require.NotEmpty(t, e.Issues)
	return e
}

func parseOK(t *testing.T, body string) *customers.Patch {
	t.Helper()
	p, err := parseCustomerPatch([]byte(body))
	require.NoError(t, err, "body: %.200s", body)
	require.NotNil(t, p)
	return p
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func field(name string, raw string) string { return `{"` + name + `":` + raw + `}` }

// set returns the value of a set-or-clear field: nil when cleared.
func set(t *testing.T, pp **string) *string {
	t.Helper()
	require.NotNil(t, pp, "field should be present in the patch")
	return *pp
}

func TestParseCustomerPatchEmpty(t *testing.T) {
	for _, body := range []string{"", " ", "\n\t", "{}", " { } "} {
		t.Run(strconv.Quote(body), func(t *testing.T) {
			p := parseOK(t, body)
			require.Equal(t, &customers.Patch{}, p, "an empty body changes nothing")
		})
	}
}

func TestParseCustomerPatchNotAnObject(t *testing.T) {
	for _, body := range []string{`[]`, `[{}]`, `"x"`, `null`, `0`, `true`, `{`, `{"limitBytes":`, `{"limitBytes":1`,
		`{} x`, `{"limitBytes":1}{"maxSplats":2}`, `{},`, `{"a" 1}`, `limitBytes=1`} {
		t.Run(body, func(t *testing.T) {
			e := parse400(t, body)
			require.Equal(t, "invalid JSON body", e.Message)
			require.Len(t, e.Issues, 1)
			require.True(t, strings.HasPrefix(e.Issues[0], "body: "), e.Issues[0])
		})
	}
}

func TestParseCustomerPatchLimitBytes(t *testing.T) {
	tests := []struct {
		raw   string
		want  int64
		issue string
	}{
		{raw: `0`, want: 0},
		{raw: `1`, want: 1},
		{raw: `1073741824`, want: 1 << 30},
		{raw: `4611686018427387904`, want: 1 << 62},
		{raw: `9223372036854775807`, want: math.MaxInt64},
		{raw: `9223372036854775808`, issue: issueLimitBytes},
		{raw: `-1`, issue: issueLimitBytes},
		{raw: `-9223372036854775808`, issue: issueLimitBytes},
		{raw: `1.5`, issue: issueLimitBytes},
		{raw: `1.0`, issue: issueLimitBytes},
		{raw: `1e3`, issue: issueLimitBytes},
		{raw: `"5"`, issue: issueLimitBytes},
		{raw: `true`, issue: issueLimitBytes},
		{raw: `[]`, issue: issueLimitBytes},
		{raw: `{}`, issue: issueLimitBytes},
		{raw: `null`, issue: "limitBytes: must not be null"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			body := field("limitBytes", tt.raw)
			if tt.issue != "" {
				require.Equal(t, []string{tt.issue}, parse400(t, body).Issues)
				return
			}
			p := parseOK(t, body)
			require.NotNil(t, p.LimitBytes)
			require.Equal(t, tt.want, *p.LimitBytes)
			require.True(t, p.HasRetention)
		})
	}
}

func TestParseCustomerPatchMaxSplats(t *testing.T) {
	tests := []struct {
		raw   string
		want  *int64
		clear bool
		issue string
	}{
		{raw: `0`, want: i64(0)},
		{raw: `25`, want: i64(25)},
		{raw: `9223372036854775807`, want: i64(math.MaxInt64)},
		{raw: `null`, clear: true},
		{raw: `-1`, issue: issueMaxSplats},
		{raw: `2.5`, issue: issueMaxSplats},
		{raw: `1e1`, issue: issueMaxSplats},
		{raw: `"3"`, issue: issueMaxSplats},
		{raw: `false`, issue: issueMaxSplats},
		{raw: `9223372036854775808`, issue: issueMaxSplats},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			body := field("maxSplats", tt.raw)
			if tt.issue != "" {
				require.Equal(t, []string{tt.issue}, parse400(t, body).Issues)
				return
			}
			p := parseOK(t, body)
			require.Equal(t, tt.want, p.MaxSplats)
			require.Equal(t, tt.clear, p.ClearMax)
			require.True(t, p.HasRetention)
		})
	}
	t.Run("absent is not clear", func(t *testing.T) {
		p := parseOK(t, `{"limitBytes":1}`)
		require.Nil(t, p.MaxSplats)
		require.False(t, p.ClearMax)
	})
}

func i64(v int64) *int64 { return &v }

func TestParseCustomerPatchEnums(t *testing.T) {
	tests := []struct {
		name, raw string
		want      string
		issue     string
	}{
		{name: "status", raw: `"active"`, want: "active"},
		{name: "status", raw: `"inactive"`, want: "inactive"},
		{name: "status", raw: `"deleted"`, issue: issueStatus},
		{name: "status", raw: `"Active"`, issue: issueStatus},
		{name: "status", raw: `""`, issue: issueStatus},
		{name: "status", raw: `1`, issue: issueStatus},
		{name: "status", raw: `null`, issue: "status: must not be null"},
		{name: "billingState", raw: `"active"`, want: "active"},
		{name: "billingState", raw: `"suspended"`, want: "suspended"},
		{name: "billingState", raw: `"canceled"`, want: "canceled"},
		{name: "billingState", raw: `"cancelled"`, issue: issueBilling},
		{name: "billingState", raw: `"inactive"`, issue: issueBilling},
		{name: "billingState", raw: `true`, issue: issueBilling},
		{name: "billingState", raw: `null`, issue: "billingState: must not be null"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.raw, func(t *testing.T) {
			body := field(tt.name, tt.raw)
			if tt.issue != "" {
				require.Equal(t, []string{tt.issue}, parse400(t, body).Issues)
				return
			}
			p := parseOK(t, body)
			got := p.Status
			if tt.name == "billingState" {
				got = p.BillingState
				require.Nil(t, p.Status)
				require.True(t, p.HasRetention)
			} else {
				require.Nil(t, p.BillingState)
				require.False(t, p.HasRetention, "status alone is not a retention change")
			}
			require.NotNil(t, got)
			require.Equal(t, tt.want, *got)
		})
	}
}

func TestParseCustomerPatchDisplayName(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		want  string
		clear bool
		issue string
	}{
		{name: "one char", raw: js("a"), want: "a"},
		{name: "ascii 120", raw: js(strings.Repeat("a", 120)), want: strings.Repeat("a", 120)},
		{name: "ascii 121", raw: js(strings.Repeat("a", 121)), issue: issueDisplayName},
		{name: "120 two-byte runes", raw: js(strings.Repeat("é", 120)), want: strings.Repeat("é", 120)},
		{name: "121 two-byte runes", raw: js(strings.Repeat("é", 121)), issue: issueDisplayName},
		{name: "120 cjk runes", raw: js(strings.Repeat("名", 120)), want: strings.Repeat("名", 120)},
		{name: "120 emoji", raw: js(strings.Repeat("😀", 120)), want: strings.Repeat("😀", 120)},
		{name: "121 emoji", raw: js(strings.Repeat("😀", 121)), issue: issueDisplayName},
		{name: "escaped runes", raw: `"` + strings.Repeat(`\u00e9`, 120) + `"`, want: strings.Repeat("é", 120)},
		{name: "empty", raw: `""`, issue: issueDisplayName},
		{name: "null clears", raw: `null`, clear: true},
		{name: "number", raw: `5`, issue: "displayName: must be a string"},
		{name: "object", raw: `{"first":"a"}`, issue: "displayName: must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := field("displayName", tt.raw)
			if tt.issue != "" {
				require.Equal(t, []string{tt.issue}, parse400(t, body).Issues)
				return
			}
			p := parseOK(t, body)
			v := set(t, p.DisplayName)
			if tt.clear {
				require.Nil(t, v)
				return
			}
			require.NotNil(t, v)
			require.Equal(t, tt.want, *v)
			require.False(t, p.HasRetention)
		})
	}
	t.Run("absent leaves unchanged", func(t *testing.T) {
		p := parseOK(t, `{}`)
		require.Nil(t, p.DisplayName)
	})
}

func urlOfLen(n int) string {
	const prefix = "https://cdn.example.com/"
	return prefix + strings.Repeat("a", n-len(prefix))
}

func TestParseCustomerPatchAvatarURL(t *testing.T) {
	tests := []struct {
		name  string
		value *string // nil means JSON null
		issue string
	}{
		{name: "https", value: ptr("https://cdn.example.com/avatars/1.png")},
		{name: "http", value: ptr("http://example.com/a.png?size=64#x")},
		{name: "upper-case scheme", value: ptr("HTTPS://EXAMPLE.COM/A.PNG")},
		{name: "with port and userinfo-free host", value: ptr("https://127.0.0.1:8443/a")},
		{name: "exactly 2048", value: ptr(urlOfLen(2048))},
		{name: "2049", value: ptr(urlOfLen(2049)), issue: issueAvatarLen},
		{name: "null clears"},
		{name: "empty", value: ptr(""), issue: issueAvatarLen},
		{name: "relative path", value: ptr("/avatars/1.png"), issue: issueAvatarURL},
		{name: "scheme-relative", value: ptr("//cdn.example.com/a.png"), issue: issueAvatarURL},
		{name: "no host", value: ptr("https://"), issue: issueAvatarURL},
		{name: "empty host with path", value: ptr("https:///a.png"), issue: issueAvatarURL},
		{name: "ftp", value: ptr("ftp://example.com/a.png"), issue: issueAvatarURL},
		{name: "javascript", value: ptr("javascript:alert(1)"), issue: issueAvatarURL},
		{name: "data", value: ptr("data:image/png;base64,AAAA"), issue: issueAvatarURL},
		{name: "opaque http", value: ptr("http:example.com"), issue: issueAvatarURL},
		{name: "plain words", value: ptr("not a url"), issue: issueAvatarURL},
		{name: "space in host", value: ptr("http://exa mple.com/"), issue: issueAvatarURL},
		{name: "control character", value: ptr("https://example.com/\n"), issue: issueAvatarURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := "null"
			if tt.value != nil {
				raw = js(*tt.value)
			}
			body := field("avatarUrl", raw)
			if tt.issue != "" {
				require.Equal(t, []string{tt.issue}, parse400(t, body).Issues)
				return
			}
			p := parseOK(t, body)
			v := set(t, p.AvatarURL)
			if tt.value == nil {
				require.Nil(t, v)
				return
			}
			require.NotNil(t, v)
			require.Equal(t, *tt.value, *v)
		})
	}
	t.Run("not a string", func(t *testing.T) {
		require.Equal(t, []string{"avatarUrl: must be a string"}, parse400(t, field("avatarUrl", `42`)).Issues)
	})
}

func ptr(s string) *string { return &s }

func TestParseCustomerPatchEmailHash(t *testing.T) {
	tests := []struct {
		name  string
		value *string
		issue string
	}{
		{name: "8 chars", value: ptr("abcdef12")},
		{name: "sha256 hex", value: ptr(strings.Repeat("ab", 32))},
		{name: "128 chars", value: ptr(strings.Repeat("x", 128))},
		{name: "base64 punctuation", value: ptr("ab+/=_-.~!")},
		{name: "8 multibyte runes", value: ptr(strings.Repeat("é", 8))},
		{name: "7 chars", value: ptr("abcdef1"), issue: issueEmailLen},
		{name: "129 chars", value: ptr(strings.Repeat("x", 129)), issue: issueEmailLen},
		{name: "empty", value: ptr(""), issue: issueEmailLen},
		{name: "inner space", value: ptr("abcd ef12"), issue: issueEmailChars},
		{name: "leading space", value: ptr(" abcdef12"), issue: issueEmailChars},
		{name: "trailing space", value: ptr("abcdef12 "), issue: issueEmailChars},
		{name: "tab", value: ptr("abcd\tef12"), issue: issueEmailChars},
		{name: "newline", value: ptr("abcdef12\n"), issue: issueEmailChars},
		{name: "nul", value: ptr("abcd\x00ef12"), issue: "emailHash: must not contain the NUL character (U+0000)"}, // the decoder's rule
		{name: "other control", value: ptr("abcd\x01ef12"), issue: issueEmailChars},
		{name: "del", value: ptr("abcd\x7fef12"), issue: issueEmailChars},
		{name: "plain e-mail is just a string", value: ptr("user@example.com")},
		{name: "null clears"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := "null"
			if tt.value != nil {
				raw = js(*tt.value)
			}
			body := field("emailHash", raw)
			if tt.issue != "" {
				require.Equal(t, []string{tt.issue}, parse400(t, body).Issues)
				return
			}
			p := parseOK(t, body)
			v := set(t, p.EmailHash)
			if tt.value == nil {
				require.Nil(t, v)
				return
			}
			require.NotNil(t, v)
			require.Equal(t, *tt.value, *v)
		})
	}
}

// metaOfSize returns a one-key metadata object whose serialized form is n bytes.
func metaOfSize(n int) string {
	// {"k":"<v>"} is 8 bytes plus the value.
	return `{"k":"` + strings.Repeat("v", n-8) + `"}`
}

func metaWithKeys(n int) string {
	m := map[string]any{}
	for i := 0; i < n; i++ {
		m["k"+strconv.Itoa(i)] = i
	}
	return js(m)
}

func TestParseCustomerPatchMetadata(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		want  map[string]any // compared when issue is empty and raw is not null
		issue string
	}{
		{name: "empty object", raw: `{}`, want: map[string]any{}},
		{name: "every allowed value type", raw: `{"s":"x","i":1,"f":-2.50,"e":1e3,"t":true,"b":false,"n":null}`,
			want: map[string]any{"s": "x", "i": json.Number("1"), "f": json.Number("-2.50"), "e": json.Number("1e3"),
				"t": true, "b": false, "n": nil}},
		{name: "large integer kept exactly", raw: `{"id":12345678901234567890}`, want: map[string]any{"id": json.Number("12345678901234567890")}},
		{name: "20 keys", raw: metaWithKeys(20)},
		{name: "21 keys", raw: metaWithKeys(21), issue: issueMetaKeys},
		{name: "4096 bytes", raw: metaOfSize(4096)},
		{name: "4097 bytes", raw: metaOfSize(4097), issue: issueMetaBytes},
		{name: "multibyte counted in bytes", raw: `{"k":"` + strings.Repeat("é", 2045) + `"}`, issue: issueMetaBytes},
		{name: "multibyte within bytes", raw: `{"k":"` + strings.Repeat("é", 2044) + `"}`},
		{name: "whitespace is not counted", raw: `{ "k" :   "` + strings.Repeat("v", 4088) + `"   }`},
		{name: "nested object", raw: `{"a":{"b":1}}`, issue: "metadata.a: values must be a string, number, boolean or null"},
		{name: "empty nested object", raw: `{"a":{}}`, issue: "metadata.a: values must be a string, number, boolean or null"},
		{name: "array value", raw: `{"a":[1,2]}`, issue: "metadata.a: values must be a string, number, boolean or null"},
		{name: "empty array value", raw: `{"a":[]}`, issue: "metadata.a: values must be a string, number, boolean or null"},
		{name: "array instead of object", raw: `[]`, issue: issueMetaObject},
		{name: "string instead of object", raw: `"x"`, issue: issueMetaObject},
		{name: "number instead of object", raw: `1`, issue: issueMetaObject},
		{name: "boolean instead of object", raw: `true`, issue: issueMetaObject},
		{name: "null clears", raw: `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := field("metadata", tt.raw)
			if tt.issue != "" {
				require.Equal(t, []string{tt.issue}, parse400(t, body).Issues)
				return
			}
			p := parseOK(t, body)
			require.NotNil(t, p.Metadata, "metadata present in the patch")
			if tt.raw == "null" {
				require.Nil(t, *p.Metadata, "null clears the metadata")
				return
			}
			require.NotNil(t, *p.Metadata)
			if tt.want != nil {
				require.Equal(t, tt.want, *p.Metadata)
			}
			require.False(t, p.HasRetention)
		})
	}
	t.Run("absent leaves unchanged", func(t *testing.T) {
		require.Nil(t, parseOK(t, `{"displayName":"x"}`).Metadata)
	})
}

// TestParseCustomerPatchMetadataSizeIsClientBytes checks the 4 KB rule against the bytes a client
// sends, not Go's re-serialization.
func TestParseCustomerPatchMetadataSizeIsClientBytes(t *testing.T) {
	p := parseOK(t, field("metadata", `{"k":"`+strings.Repeat("<", 1000)+`"}`))
	require.NotNil(t, p.Metadata)
}

// TestParseCustomerPatchMetadataKeyEchoIsSanitized checks that a metadata key echoed in an issue is
// bounded and free of control characters, like the unknown-field names are.
func TestParseCustomerPatchMetadataKeyEchoIsSanitized(t *testing.T) {
	key := strings.Repeat("k", 10000) + "\n\x1b[31m"
	e := parse400(t, `{"metadata":{`+js(key)+`:{}}}`)
	require.Len(t, e.Issues, 1)
	require.LessOrEqual(t, len(e.Issues[0]), 300)
	require.NotContains(t, e.Issues[0], "\n")
	require.NotContains(t, e.Issues[0], "\x1b")
}

func hexIDs(n int, upper bool) []string {
	out := make([]string, n)
	for i := range out {
		s := fmt.Sprintf("%024x", i+1)
		if upper {
			s = strings.ToUpper(fmt.Sprintf("%024x", 0xabc000+i))
		}
		out[i] = s
	}
	return out
}

func TestParseCustomerPatchSplatIDLists(t *testing.T) {
	for _, name := range []string{"keepSplatIds", "protectedSplatIds"} {
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				name   string
				raw    string
				want   []string
				issues []string
			}{
				{name: "empty", raw: `[]`, want: []string{}},
				{name: "one", raw: js([]string{id1}), want: []string{id1}},
				{name: "two", raw: js([]string{id1, id2}), want: []string{id1, id2}},
				{name: "upper-case hex", raw: js(hexIDs(2, true)), want: hexIDs(2, true)},
				{name: "1000 ids", raw: js(hexIDs(1000, false)), want: hexIDs(1000, false)},
				{name: "1001 ids", raw: js(hexIDs(1001, false)), issues: []string{name + ": at most 1000 items"}},
				{name: "duplicate", raw: js([]string{id1, id2, id1}), issues: []string{name + "[2]: duplicate value"}},
				{name: "23 chars", raw: js([]string{id1[:23]}), issues: []string{name + "[0]: " + issueKeepID}},
				{name: "25 chars", raw: js([]string{id1 + "0"}), issues: []string{name + "[0]: " + issueKeepID}},
				{name: "non-hex", raw: js([]string{"0123456789abcdef0123456g"}), issues: []string{name + "[0]: " + issueKeepID}},
				{name: "empty string", raw: `[""]`, issues: []string{name + "[0]: " + issueKeepID}},
				{name: "number item", raw: `[1]`, issues: []string{name + "[0]: must be a string"}},
				{name: "null item", raw: `[null]`, issues: []string{name + "[0]: must be a string"}},
				{name: "every bad item named", raw: `["` + id1 + `",5,"nope","` + id1 + `"]`, issues: []string{
					name + "[1]: must be a string", name + "[2]: " + issueKeepID, name + "[3]: duplicate value"}},
				{name: "string instead of array", raw: js(id1), issues: []string{name + ": must be an array of strings"}},
				{name: "object instead of array", raw: `{}`, issues: []string{name + ": must be an array of strings"}},
				{name: "null", raw: `null`, issues: []string{name + ": must not be null"}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					body := field(name, tt.raw)
					if tt.issues != nil {
						require.Equal(t, tt.issues, parse400(t, body).Issues)
						return
					}
					p := parseOK(t, body)
					got, other := p.KeepSceneIDs, p.ProtectedIDs
					if name == "protectedSplatIds" {
						got, other = other, got
					}
					require.Equal(t, tt.want, got)
					require.Nil(t, other)
					require.True(t, p.HasRetention)
				})
			}
		})
	}
}

func TestParseCustomerPatchUnknownFields(t *testing.T) {
	tests := []struct {
		body   string
		issues []string
	}{
		{body: `{"limitbytes":1}`, issues: []string{"limitbytes: unknown field"}},
		{body: `{"LimitBytes":1}`, issues: []string{"LimitBytes: unknown field"}},
		{body: `{"externalUserId":"x"}`, issues: []string{"externalUserId: unknown field"}},
		{body: `{"usedBytes":0,"id":"x"}`, issues: []string{"id: unknown field", "usedBytes: unknown field"}},
		{body: `{"foo":null,"limitBytes":5}`, issues: []string{"foo: unknown field"}},
		{body: `{"a\u0001b":1}`, issues: []string{"a?b: unknown field"}},
		// A NUL, which Postgres cannot store, is refused by the decoder before any field rule.
		{body: `{"a\u0000b":1}`, issues: []string{"a?b: must not contain the NUL character (U+0000)"}},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			require.Equal(t, tt.issues, parse400(t, tt.body).Issues)
		})
	}
}

func TestParseCustomerPatchReportsEveryProblem(t *testing.T) {
	body := `{
		"limitBytes": -1, "maxSplats": 1.5, "status": "gone", "billingState": null,
		"displayName": "", "avatarUrl": "ftp://x", "emailHash": "short", "metadata": {"a": {}},
		"keepSplatIds": ["x"], "protectedSplatIds": "y", "extra": 1
	}`
	e := parse400(t, body)
	require.Equal(t, "validation failed", e.Message)
	require.ElementsMatch(t, []string{
		"extra: unknown field",
		"billingState: must not be null",
		issueLimitBytes,
		issueMaxSplats,
		issueStatus,
		issueDisplayName,
		issueAvatarURL,
		issueEmailLen,
		"metadata.a: values must be a string, number, boolean or null",
		"keepSplatIds[0]: " + issueKeepID,
		"protectedSplatIds: must be an array of strings",
	}, e.Issues)
}

func TestParseCustomerPatchFull(t *testing.T) {
	body := js(map[string]any{
		"limitBytes": 1 << 30, "maxSplats": 10, "status": "inactive", "billingState": "suspended",
		"keepSplatIds": []string{id1}, "protectedSplatIds": []string{id2},
		"displayName": "Ada", "avatarUrl": "https://example.com/a.png", "emailHash": "0123456789abcdef",
		"metadata": map[string]any{"plan": "gold", "seats": 3},
	})
	p := parseOK(t, body)
	require.Equal(t, int64(1<<30), *p.LimitBytes)
	require.Equal(t, int64(10), *p.MaxSplats)
	require.False(t, p.ClearMax)
	require.Equal(t, "inactive", *p.Status)
	require.Equal(t, "suspended", *p.BillingState)
	require.Equal(t, []string{id1}, p.KeepSceneIDs)
	require.Equal(t, []string{id2}, p.ProtectedIDs)
	require.Equal(t, "Ada", **p.DisplayName)
	require.Equal(t, "https://example.com/a.png", **p.AvatarURL)
	require.Equal(t, "0123456789abcdef", **p.EmailHash)
	require.Equal(t, map[string]any{"plan": "gold", "seats": json.Number("3")}, *p.Metadata)
	require.True(t, p.HasRetention)
}

func TestParseCustomerPatchClearsTogether(t *testing.T) {
	p := parseOK(t, `{"maxSplats":null,"displayName":null,"avatarUrl":null,"emailHash":null,"metadata":null}`)
	require.Nil(t, p.MaxSplats)
	require.True(t, p.ClearMax)
	require.Nil(t, set(t, p.DisplayName))
	require.Nil(t, set(t, p.AvatarURL))
	require.Nil(t, set(t, p.EmailHash))
	require.NotNil(t, p.Metadata)
	require.Nil(t, *p.Metadata)
	require.Nil(t, p.LimitBytes)
	require.Nil(t, p.Status)
	require.Nil(t, p.BillingState)
	require.True(t, p.HasRetention, "clearing maxSplats changes a cap")
}

// TestPutExternalUserRejectsBeforeTheDatabase drives the PUT handler over HTTP for the answers it
// gives before touching the database (the Service has none here).
func TestPutExternalUserRejectsBeforeTheDatabase(t *testing.T) {
	s := &Service{}
	app := fiber.New(fiber.Config{ErrorHandler: httpx.ErrorHandler(slog.New(slog.NewJSONHandler(io.Discard, nil)))})
	app.Use(func(c *fiber.Ctx) error {
		switch c.Get("X-Test-Caller") {
		case "key":
			httpx.SetCaller(c, &httpx.Caller{Scheme: httpx.SchemeKey, IntegrationID: "i"})
		case "key+eu":
			httpx.SetCaller(c, &httpx.Caller{Scheme: httpx.SchemeKey, IntegrationID: "i", ExternalUserID: "c1", HasExternalUser: true})
		case "session":
			httpx.SetCaller(c, &httpx.Caller{Scheme: httpx.SchemeSession, ExternalUserID: "c1", HasExternalUser: true})
		}
		return c.Next()
	})
	app.Put("/api/v1/external-user", s.putExternalUser)
	app.Get("/api/v1/external-user", s.getExternalUser)
	app.Get("/api/v1/external-user/usage", s.getUsage)

	tests := []struct {
		name, method, caller, body string
		status                     int
		issues                     []string
	}{
		{name: "no caller", method: "PUT", body: `{}`, status: 401},
		{name: "session caller", method: "PUT", caller: "session", body: `{}`, status: 401},
		{name: "missing EU", method: "PUT", caller: "key", body: `{}`, status: 400,
			issues: []string{httpx.ExternalUserHeader + ": required"}},
		{name: "GET missing EU", method: "GET", caller: "key", status: 400,
			issues: []string{httpx.ExternalUserHeader + ": required"}},
		{name: "not an object", method: "PUT", caller: "key+eu", body: `[]`, status: 400,
			issues: []string{"body: must be a JSON object"}},
		{name: "bad fields", method: "PUT", caller: "key+eu", body: `{"limitBytes":-1,"nope":1}`, status: 400,
			issues: []string{"nope: unknown field", issueLimitBytes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/api/v1/external-user", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			if tt.caller != "" {
				req.Header.Set("X-Test-Caller", tt.caller)
			}
			resp, err := app.Test(req, -1)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, tt.status, resp.StatusCode)
			var env struct {
				Status  string   `json:"status"`
				Message string   `json:"message"`
				Issues  []string `json:"issues"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
			require.Equal(t, "error", env.Status)
			require.NotEmpty(t, env.Message)
			require.Equal(t, tt.issues, env.Issues)
		})
	}
}
