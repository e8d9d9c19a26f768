package apitest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/api/apitest"
)

const wireDoc = `
openapi: 3.1.0
info: {title: t, version: '1'}
paths: {}
components:
  schemas:
    Base:
      type: object
      required: [id, at]
      properties:
        id: {type: string}
        at: {type: string, format: date-time}
    Thing:
      allOf: [{$ref: '#/components/schemas/Base'}]
      required: [count, note, tags]
      properties:
        count: {type: integer}
        note: {type: [string, 'null']}
        tags: {type: array, items: {type: string}}
        ratio: {type: number}
`

type base struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

// thing matches Thing: an embedded struct is flattened as encoding/json does.
type thing struct {
	base
	Count int      `json:"count"`
	Note  *string  `json:"note"`
	Tags  []string `json:"tags"`
	Ratio float64  `json:"ratio,omitempty"`
}

type drifted struct {
	ID    int      `json:"id"`     // wrong type
	Count int      `json:"count"`  //
	Note  string   `json:"note"`   // cannot hold null
	Tags  []string `json:"labels"` // renamed
	Ratio float64  `json:"ratio"`  // sent always, not required
}

func TestCompareTypeFindsEveryKindOfDrift(t *testing.T) {
	doc, err := apitest.Parse([]byte(wireDoc))
	require.NoError(t, err)
	ptr := "/components/schemas/Thing"
	require.Empty(t, doc.CompareType(apitest.WireType{Value: thing{}, Pointer: ptr}))

	require.ElementsMatch(t, []string{
		"id: the Go type int is JSON integer; the schema allows [string]",
		"note: may be null, but string cannot hold null",
		"labels: the Go field is not in the schema",
		"tags: documented, but the Go type has no field for it",
		"at: documented, but the Go type has no field for it",
	}, doc.CompareType(apitest.WireType{Value: drifted{}, Pointer: ptr}))

	// Encoded: what is always sent must be required, what is required must be there, and null
	// must be allowed where sent.
	require.ElementsMatch(t, []string{
		"id: the Go type int is JSON integer; the schema allows [string]",
		"labels: the Go field is not in the schema",
		"ratio: required in the schema is false, but the Go field is sent always is true",
		"tags: required, but the Go type has no field for it",
		"at: required, but the Go type has no field for it",
	}, doc.CompareType(apitest.WireType{Value: drifted{}, Pointer: ptr, Dir: apitest.Encoded}))

	// An allowance silences its path, and one with nothing to allow is reported.
	require.Equal(t, []string{"count: allowed a difference, but there is none"},
		doc.CompareType(apitest.WireType{Value: thing{}, Pointer: ptr, Allow: map[string]string{"count": "no reason"}}))
}
