//go:build chaos

package e2e

// chaosFull is true under `make chaos` (build tag chaos): the fault cases run at full scale.
const chaosFull = true

// chaosRunsPending: the full suite always runs the parts that wait for issue 12's fixes.
const chaosRunsPending = true
