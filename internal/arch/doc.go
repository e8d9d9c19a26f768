// Package arch holds the test that keeps the dependency direction of the codebase:
// gateway → services → stores, workflows → workflows/contract ← activities → stores, and nothing
// importing upward.
package arch
