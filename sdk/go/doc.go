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
// Every non-2xx answer becomes an [*APIError] carrying the spec's error envelope. Every answer
// of the service has a Code (the Code* constants): branch on it with [IsCode],
// [IsCustomerNotProvisioned], [IsUnauthorized] (a 401 of the credentials only) and the like. Use
// [errors.As] to reach the error, and its Storage, PlanLimit and CloneInProgress fields for the
// typed details of the 413, 403 plan_limit and 429 envelopes.
//
// # Retries
//
// Calls whose repetition cannot act twice are retried on 5xx answers and network errors with
// exponential backoff and full jitter (see [RetryPolicy]): every GET, PUT, PATCH and DELETE;
// the calls on routes that honour Idempotency-Key (scene commits, clone starts, the upload
// requests, PutCustomer, DeleteCustomer), which send one key on every attempt so a retry gets
// the first answer; and the POSTs whose repetition is harmless (embed-session mints, multipart
// completes, redeliveries, rendition retries, integration revokes). Account and integration
// creation, key rotation and webhook creation and rotation are never retried: a lost answer
// would hide a record or a secret that was made anyway. Cancelling the context stops a retry
// loop at once.
//
// # Lists
//
// [Client.AllSplats], [Client.AllWebhookDeliveries] and [Client.AllTrendingSplats] iterate over
// every page of a list for a range loop.
//
// # Helpers
//
// [Client.UploadFile] and [Client.UploadFolder] do the whole two-step upload and the commit,
// reporting progress; [Client.CloneAndWait] starts a clone and polls a 202 job to completion.
package splathost
