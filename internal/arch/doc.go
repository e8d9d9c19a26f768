// Package arch holds the test that keeps the dependency direction of the codebase:
// gateway → services → stores, workflows → workflows/contract ← activities → stores, and nothing
// importing upward. It checks tests and the e2e tests too; that no service imports another and
// only cmd/ and internal/allinone import a service (today's exceptions listed, each with why, in
// a list that may only shrink); that workflows/contract needs only the standard library and the
// Temporal SDK; and that ent knows no workflow package.
package arch
