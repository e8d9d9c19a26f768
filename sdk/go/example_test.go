package splathost_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	splathost "github.com/splathost/splathost/sdk/go"
)

// An integrator provisions a customer, uploads a scene for them, publishes it and mints a
// viewer session for an embed.
func Example() {
	ctx := context.Background()
	c, err := splathost.New(os.Getenv("SPLATHOST_URL"),
		splathost.WithKeys(os.Getenv("SPLATHOST_PUBLIC_KEY"), os.Getenv("SPLATHOST_SECRET_KEY")))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.PutCustomer(ctx, "customer-42", splathost.CustomerUpdate{
		LimitBytes: splathost.Ptr[int64](5 << 30), MaxSplats: splathost.Null[int64](),
	}); err != nil {
		log.Fatal(err)
	}
	scene, err := c.UploadFile(ctx, "customer-42", "garden.ply", splathost.UploadOptions{
		Title: "Garden",
		OnProgress: func(p splathost.Progress) {
			fmt.Fprintf(os.Stderr, "\r%d/%d bytes", p.BytesDone, p.BytesTotal)
		},
	})
	var apiErr *splathost.APIError
	if errors.As(err, &apiErr) && apiErr.Storage != nil {
		log.Fatalf("customer is full: %d of %d bytes used", apiErr.Storage.UsedBytes, apiErr.Storage.LimitBytes)
	}
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.PatchSplat(ctx, "customer-42", scene.SplatID, splathost.SplatPatch{Visibility: splathost.Ptr(splathost.Public)}); err != nil {
		log.Fatal(err)
	}
	s, err := c.MintSession(ctx, splathost.SessionRequest{Type: splathost.SessionViewer, SplatID: scene.SplatID})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("embed with", s.SessionToken)
}

// Clone a scene and wait for the copy, whether the service finishes it within the request or
// hands back a job to poll.
func ExampleClient_CloneAndWait() {
	ctx := context.Background()
	c, _ := splathost.New("https://api.example.com", splathost.WithKeys("mpk_...", "msk_..."))
	res, err := c.CloneAndWait(ctx, "customer-42", "65f0c0ffee0000000000abcd", splathost.CloneOptions{
		OnProgress: func(j splathost.CloneJob) { fmt.Printf("%d/%d objects\n", j.CopiedObjects, j.TotalObjects) },
	})
	var apiErr *splathost.APIError
	if errors.As(err, &apiErr) && apiErr.CloneInProgress != nil {
		fmt.Println("another clone is running:", apiErr.CloneInProgress.JobID)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("copy:", res.SplatID)
}

// An operator creates an account and an integration, and later rotates its secret.
func ExampleClient_CreateIntegration() {
	ctx := context.Background()
	c, _ := splathost.New("https://api.example.com", splathost.WithAdminToken(os.Getenv("SPLATHOST_ADMIN_TOKEN")))
	acct, err := c.CreateAccount(ctx, splathost.NewAccount{Name: "Shop", Plan: splathost.PlanPro, StorageBundleBytes: 100 << 30})
	if err != nil {
		log.Fatal(err)
	}
	in, err := c.CreateIntegration(ctx, splathost.NewIntegration{AccountID: acct.ID, ProductSlug: "shop.example.com",
		Capabilities: []string{"viewer", "editor"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("public key:", in.PublicKey, "secret (shown once):", in.SecretKey)
	rotated, err := c.RotateIntegration(ctx, in.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("new secret:", rotated.SecretKey)
}
