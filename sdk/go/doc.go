// Package splathost is the Go client of the splathost REST API: customer (external user)
// management, scene upload and management, clone jobs, embed-session minting and the operator
// API for accounts and integrations.
//
// A [Client] is safe for concurrent use. It authenticates with an integration's key pair
// ([WithKeys]) for the /api endpoints and with the operator's admin token ([WithAdminToken])
// for the /admin endpoints; one client may carry both.
//
// # Errors
//
// Every non-2xx answer becomes an [*APIError] carrying the spec's error envelope. Use
// [errors.As] to reach it, and its Storage, PlanLimit and CloneInProgress fields for the typed
// details of the 413, 403 plan_limit and 429 envelopes.
//
// # Retries
//
// Requests that can be repeated without a second effect are retried on 5xx answers and network
// errors with exponential backoff and full jitter (see [RetryPolicy]): every GET, PUT, PATCH and
// DELETE, and the POSTs whose repetition is harmless — the three upload-URL requests (an unused
// signed URL expires and the orphan sweep removes it), embed-session mints (a second token is
// simply unused), clone-job polls and integration revokes (revoking twice is a no-op). Scene
// commits, clone starts, account and integration creation and key rotation are never retried:
// a lost answer would hide a scene, a copy, a record or a secret that was made anyway.
// Cancelling the context stops a retry loop at once.
//
// # Helpers
//
// [Client.UploadFile] and [Client.UploadFolder] do the whole two-step upload and the commit,
// reporting progress; [Client.CloneAndWait] starts a clone and polls a 202 job to completion.
package splathost
