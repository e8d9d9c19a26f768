//go:build e2e

package e2e

import (
	"sync"
	"testing"

	"github.com/splathost/splathost/internal/testenv"
)

// TestIssuedKeysWorkAtOnce issues integrations concurrently while every issuance flushes the
// caches: each new key pair must authenticate on its very first call.
func TestIssuedKeysWorkAtOnce(t *testing.T) {
	a := newTenant(t)
	var wg sync.WaitGroup
	errs := make(chan string, 1000)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				r, err := testenv.Do(env.URL, "POST", "/admin/v1/integrations", admin(), map[string]any{"accountId": a.AccountID, "productSlug": "x.example", "capabilities": []string{"viewer"}})
				if err != nil || r.Status != 201 {
					errs <- "create"
					return
				}
				in := r.Body["integration"].(map[string]any)
				c := tenant{PublicKey: in["publicKey"].(string), SecretKey: in["secretKey"].(string)}
				r2, err := testenv.Do(env.URL, "GET", "/api/v1/external-user", c.keys("nobody"), nil)
				if err != nil {
					errs <- err.Error()
				} else if r2.Status != 404 {
					errs <- string(r2.Raw)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
