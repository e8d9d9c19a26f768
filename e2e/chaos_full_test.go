//go:build e2e && chaos

package e2e

// chaosFull is true under `make chaos` (build tag chaos): the fault cases run at full scale.
const chaosFull = true
