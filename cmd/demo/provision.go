package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/restclient"
	"github.com/splathost/splathost/internal/uploadrules"
)

// sampleSplats is the sample scene's size: a few thousand splats render quickly in a software
// WebGL (the browser tests run on SwiftShader), and the standing scene's coverage does not
// depend on the count, so it still shows a solid column on a solid ground.
const sampleSplats = 3000

// heroScene is what the sample scene shows: the README's hero, a column standing on a ground
// plane, stored y-down as 3DGS training leaves real scans, so the page opens on a scan drawn
// upright rather than on a symmetric ball.
var heroScene = fixtures.Gen{Seed: fixtures.DefaultSeed, Scene: fixtures.SceneStand}

// demoLimitBytes is the demo customer's storage allocation, set on every start so that a
// crashed quota experiment (the browser tests lower it) never leaves the demo stuck.
const demoLimitBytes = 256 << 20

// state is the demo's state file: what it created through the operator API, so a restart
// reuses the same tenant instead of making a new one each time. It holds the secret key, so it
// is written 0600 and never served.
type state struct {
	GatewayURL    string `json:"gatewayUrl"`
	AccountID     string `json:"accountId"`
	IntegrationID string `json:"integrationId"`
	PublicKey     string `json:"publicKey"`
	SecretKey     string `json:"secretKey"`
	Customer      string `json:"customer"`
	SampleSplatID string `json:"sampleSplatId"`
	// SampleScene names what the sample shows ("stand"); a state file of an older run has none,
	// its sample being the ball, which the next start replaces with the hero.
	SampleScene string `json:"sampleScene,omitempty"`
}

// provisioner makes sure the demo tenant exists on the gateway.
type provisioner struct {
	gateway, adminToken, stateFile, customer string
	log                                      *slog.Logger
}

// ensure returns a working tenant: the recorded one when its keys still work on this gateway,
// a new one otherwise (a fresh .dev, a revoked integration).
func (p *provisioner) ensure() (state, error) {
	// The keys decide, not the recorded gateway URL: random ports on the same data keep them.
	st, err := p.load()
	if err != nil {
		return state{}, err
	}
	if st.SecretKey == "" || st.Customer != p.customer || !p.keysWork(st) {
		if st, err = p.createTenant(); err != nil {
			return state{}, err
		}
		p.log.Info("created the demo tenant", "account", st.AccountID, "integration", st.IntegrationID)
	}
	st.GatewayURL = p.gateway
	r, err := restclient.Do(p.gateway, "PUT", "/api/v1/external-user", st.keys(),
		map[string]any{"displayName": "Demo customer", "limitBytes": demoLimitBytes, "status": "active"})
	if err := expect(r, err, 200); err != nil {
		return state{}, fmt.Errorf("provision the demo customer: %w", err)
	}
	if st.SampleSplatID, err = p.sampleScene(st); err != nil {
		return state{}, err
	}
	st.SampleScene = heroScene.Scene.String()
	return st, p.save(st)
}

func (p *provisioner) load() (state, error) {
	raw, err := os.ReadFile(p.stateFile)
	if errors.Is(err, os.ErrNotExist) {
		return state{}, nil
	}
	if err != nil {
		return state{}, err
	}
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		return state{}, fmt.Errorf("%s: %w", p.stateFile, err)
	}
	return st, nil
}

func (p *provisioner) save(st state) error {
	if err := os.MkdirAll(filepath.Dir(p.stateFile), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(p.stateFile, append(b, '\n'), 0o600)
}

// keysWork reports whether the recorded keys still authenticate: any answer but 401 (unknown
// keys, a wiped database) or 410 (revoked) means they do.
func (p *provisioner) keysWork(st state) bool {
	r, err := restclient.Do(p.gateway, "GET", "/api/v1/external-user", st.keys(), nil)
	return err == nil && r.Status != 401 && r.Status != 410
}

func (p *provisioner) createTenant() (state, error) {
	admin := map[string]string{"Authorization": "Bearer " + p.adminToken}
	r, err := restclient.Do(p.gateway, "POST", "/admin/v1/accounts", admin, map[string]any{
		"name": "Demo host", "plan": "pro", "storageBundleBytes": 1 << 30, "maxSplats": nil, "overage": false})
	if err := expect(r, err, 201); err != nil {
		return state{}, fmt.Errorf("create the account: %w", err)
	}
	accountID, _ := r.Body["account"].(map[string]any)["id"].(string)
	r, err = restclient.Do(p.gateway, "POST", "/admin/v1/integrations", admin, map[string]any{
		"accountId": accountID, "productSlug": "demo.localhost", "capabilities": []string{"viewer", "editor"}})
	if err := expect(r, err, 201); err != nil {
		return state{}, fmt.Errorf("create the integration: %w", err)
	}
	in := r.Body["integration"].(map[string]any)
	return state{GatewayURL: p.gateway, AccountID: accountID, IntegrationID: str(in["id"]),
		PublicKey: str(in["publicKey"]), SecretKey: str(in["secretKey"]), Customer: p.customer}, nil
}

// sampleScene keeps the recorded sample while it exists and is the hero, else seeds the hero: a
// small PLY, uploaded and committed as the demo customer. An older run's ball stays among the
// customer's scenes; the page just no longer opens on it.
func (p *provisioner) sampleScene(st state) (string, error) {
	if st.SampleSplatID != "" && st.SampleScene == heroScene.Scene.String() {
		r, err := restclient.Do(p.gateway, "GET", "/api/v1/splats/"+st.SampleSplatID, st.keys(), nil)
		if err == nil && r.Status == 200 {
			return st.SampleSplatID, nil
		}
	}
	data := heroScene.PLY(sampleSplats)
	r, err := restclient.Do(p.gateway, "POST", "/api/v1/uploads/splat-file", st.keys(),
		map[string]any{"fileName": "sample.ply", "contentType": "application/ply", "fileSize": len(data)})
	if err := expect(r, err, 200); err != nil {
		return "", fmt.Errorf("sign the sample upload: %w", err)
	}
	if err := putSigned(str(r.Body["uploadUrl"]), "application/ply", data); err != nil {
		return "", err
	}
	r, err = restclient.Do(p.gateway, "POST", "/api/v1/splats", st.keys(), map[string]any{
		"title": "Sample scene", "description": "Seeded by the demo host: a column standing on a ground plane, stored y-down as training writes scans.", "splatUrl": r.Body["fileUrl"]})
	if err := expect(r, err, 201); err != nil {
		return "", fmt.Errorf("commit the sample scene: %w", err)
	}
	p.log.Info("seeded the sample scene", "splatId", r.Body["splatId"])
	return str(r.Body["splatId"]), nil
}

// keys are the REST API headers of the demo customer.
func (st state) keys() map[string]string {
	return map[string]string{"Authorization": "Bearer " + st.SecretKey, "X-Service-Public-Key": st.PublicKey,
		"X-Service-External-User-Id": st.Customer}
}

// putSigned uploads data to a signed URL with the headers the signature covers.
func putSigned(url, contentType string, data []byte) error {
	req, err := http.NewRequest("PUT", url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Cache-Control", uploadrules.CacheControl)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("signed upload: status %d", resp.StatusCode)
	}
	return nil
}

// expect turns a call's outcome into an error unless it answered want. The body goes into
// the message: the gateway's error envelope says what was wrong, and never holds a secret.
func expect(r *restclient.Response, err error, want int) error {
	if err != nil {
		return err
	}
	if r.Status != want {
		return fmt.Errorf("status %d: %s", r.Status, r.Raw)
	}
	return nil
}

func str(v any) string { s, _ := v.(string); return s }
