// Package flowtest runs workflows with the real activities they call, over an in-memory bucket
// (activitiestest.Bucket): the tests that need both sides of the workflow contract. They live
// here because neither side may import the other (workflows know the activities only by
// contract, and activities never import workflows; internal/arch checks both, tests included).
// The package has no code of its own.
package flowtest
