//go:build !chaos

package e2e

// chaosFull is false in `make test`: the fault suite runs its short form only.
const chaosFull = false

// chaosRunsPending says whether the short form also runs the parts that wait for issue 12's
// fixes (the abuse rows marked pending, double commits in the race). It is false until those
// fixes are merged; set it true then, so `make test` holds them too.
const chaosRunsPending = false
