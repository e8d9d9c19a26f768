//go:build e2e && !chaos

package e2e

// chaosFull is false in `make test`: the fault suite runs its short form only.
const chaosFull = false
