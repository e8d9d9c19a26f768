// Package arch holds the test that keeps the dependency direction of the codebase:
// gateway → services → stores, workflows → activities, and nothing importing upward.
package arch
