package httpx

import "time"

// ISOTime formats t as the interface's ISO 8601 timestamps: UTC, millisecond precision.
func ISOTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// ISOTimePtr is ISOTime for optional times; nil stays null.
func ISOTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := ISOTime(*t)
	return &s
}
