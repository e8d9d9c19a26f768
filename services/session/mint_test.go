package session

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/sessiontoken"
)

func TestParseMint(t *testing.T) {
	avatar := "https://cdn.example.com/a.png"
	tests := []struct {
		name   string
		body   string
		want   *mintRequest
		issues []string
	}{
		{name: "minimal", body: `{"publicKey":"mpk_x"}`, want: &mintRequest{publicKey: "mpk_x", typ: sessiontoken.TypeEditor}},
		{name: "viewer with scene and profile", body: `{"publicKey":"mpk_x","type":"viewer","splatId":"AAAAAAAAAAAAAAAAAAAAAAAA","user":{"name":"Ada","avatarUrl":"` + avatar + `"}}`,
			want: &mintRequest{publicKey: "mpk_x", typ: sessiontoken.TypeViewer, splatID: "aaaaaaaaaaaaaaaaaaaaaaaa", hasUser: true, name: "Ada", avatarURL: &avatar}},
		{name: "nulls", body: `{"publicKey":"mpk_x","splatId":null,"user":null}`, want: &mintRequest{publicKey: "mpk_x", typ: sessiontoken.TypeEditor}},
		{name: "null avatar", body: `{"publicKey":"mpk_x","user":{"name":"Ada","avatarUrl":null}}`,
			want: &mintRequest{publicKey: "mpk_x", typ: sessiontoken.TypeEditor, hasUser: true, name: "Ada"}},
		{name: "64-character name", body: `{"publicKey":"mpk_x","user":{"name":"` + strings.Repeat("é", 64) + `"}}`,
			want: &mintRequest{publicKey: "mpk_x", typ: sessiontoken.TypeEditor, hasUser: true, name: strings.Repeat("é", 64)}},
		{name: "co-edit editor", body: `{"publicKey":"mpk_x","coEdit":true,"splatId":"aaaaaaaaaaaaaaaaaaaaaaaa"}`,
			want: &mintRequest{publicKey: "mpk_x", typ: sessiontoken.TypeEditor, coEdit: true, splatID: "aaaaaaaaaaaaaaaaaaaaaaaa"}},
		{name: "no co-edit viewer", body: `{"publicKey":"mpk_x","type":"viewer","coEdit":false}`, want: &mintRequest{publicKey: "mpk_x", typ: sessiontoken.TypeViewer}},

		{name: "empty body", body: ``, issues: []string{"body: must be a JSON object"}},
		{name: "co-edit viewer", body: `{"publicKey":"mpk_x","type":"viewer","coEdit":true}`, issues: []string{"coEdit: only an editor session joins a room"}},
		{name: "co-edit not a boolean", body: `{"publicKey":"mpk_x","coEdit":"yes"}`, issues: []string{"coEdit: must be a boolean"}},
		{name: "co-edit without a scene", body: `{"publicKey":"mpk_x","coEdit":true}`, issues: []string{"coEdit: requires splatId"}},
		{name: "null co-edit", body: `{"publicKey":"mpk_x","coEdit":null}`, issues: []string{"coEdit: must not be null"}},
		{name: "not JSON", body: `{"publicKey":`, issues: []string{"body: malformed JSON"}},
		{name: "array", body: `[]`, issues: []string{"body: must be a JSON object"}},
		{name: "no public key", body: `{}`, issues: []string{"publicKey: required"}},
		{name: "null public key", body: `{"publicKey":null}`, issues: []string{"publicKey: required"}},
		{name: "secret as public key", body: `{"publicKey":"msk_x"}`, issues: []string{"publicKey: must start with mpk_"}},
		{name: "public key not a string", body: `{"publicKey":5}`, issues: []string{"publicKey: must be a string"}},
		{name: "bad type", body: `{"publicKey":"mpk_x","type":"admin"}`, issues: []string{"type: must be one of 'viewer', 'editor'"}},
		{name: "null type", body: `{"publicKey":"mpk_x","type":null}`, issues: []string{"type: must not be null"}},
		{name: "short splat id", body: `{"publicKey":"mpk_x","splatId":"abc"}`, issues: []string{"splatId: must be a 24-character hexadecimal scene id"}},
		{name: "non-hex splat id", body: `{"publicKey":"mpk_x","splatId":"zzzzzzzzzzzzzzzzzzzzzzzz"}`, issues: []string{"splatId: must be a 24-character hexadecimal scene id"}},
		{name: "splat id not a string", body: `{"publicKey":"mpk_x","splatId":12}`, issues: []string{"splatId: must be a string"}},
		{name: "user not an object", body: `{"publicKey":"mpk_x","user":"Ada"}`, issues: []string{"user: must be a JSON object"}},
		{name: "user without name", body: `{"publicKey":"mpk_x","user":{}}`, issues: []string{"user.name: required"}},
		{name: "empty name", body: `{"publicKey":"mpk_x","user":{"name":""}}`, issues: []string{"user.name: must be 1-64 characters"}},
		{name: "blank name", body: `{"publicKey":"mpk_x","user":{"name":"   "}}`, issues: []string{"user.name: must not be blank"}},
		{name: "65-character name", body: `{"publicKey":"mpk_x","user":{"name":"` + strings.Repeat("a", 65) + `"}}`, issues: []string{"user.name: must be 1-64 characters"}},
		{name: "avatar not http", body: `{"publicKey":"mpk_x","user":{"name":"A","avatarUrl":"javascript:alert(1)"}}`, issues: []string{"user.avatarUrl: must be an absolute http(s) URL"}},
		{name: "avatar too long", body: `{"publicKey":"mpk_x","user":{"name":"A","avatarUrl":"https://x.example/` + strings.Repeat("a", 2048) + `"}}`, issues: []string{"user.avatarUrl: must be 1-2048 characters"}},
		{name: "unknown user field", body: `{"publicKey":"mpk_x","user":{"name":"A","email":"a@b"}}`, issues: []string{"user.email: unknown field"}},
		{name: "unknown field", body: `{"publicKey":"mpk_x","splat":"x"}`, issues: []string{"splat: unknown field"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMint([]byte(tt.body))
			if tt.issues == nil {
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
				return
			}
			require.Error(t, err)
			e := apperr.From(err)
			require.Equal(t, 400, e.Status)
			for _, want := range tt.issues {
				found := false
				for _, is := range e.Issues {
					found = found || strings.HasPrefix(is, want)
				}
				require.True(t, found, "issues %q lack %q", e.Issues, want)
			}
		})
	}
}
