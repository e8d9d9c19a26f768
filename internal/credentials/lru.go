package credentials

import "container/list"

// byteLRU is a least-recently-used map bounded by the bytes its entries cost, not by their
// count: a cache keyed by what clients send must not grow with the size of what they send, and
// when it is full it evicts the coldest entries instead of refusing new ones, so the keys in use
// keep being cached whatever else passed through. Not safe for concurrent use: the owner locks.
type byteLRU[V any] struct {
	max, used int64
	order     list.List // front: most recently used; elements hold *lruEntry[V]
	byKey     map[string]*list.Element
}

type lruEntry[V any] struct {
	key  string
	val  V
	cost int64
}

// lruEntryOverhead approximates what an entry costs beyond its key and value: the map slot, the
// list element and the entry itself.
const lruEntryOverhead = 160

func newByteLRU[V any](maxBytes int64) *byteLRU[V] {
	return &byteLRU[V]{max: maxBytes, byKey: map[string]*list.Element{}}
}

// get returns the value of key and marks it used.
func (l *byteLRU[V]) get(key string) (V, bool) {
	e, ok := l.byKey[key]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry[V]).val, true
}

// put stores val under key at valueCost bytes (plus the key and the overhead), evicting the
// least recently used entries until everything fits. An entry larger than the whole budget is
// not stored. key must own its bytes (not alias a request buffer).
func (l *byteLRU[V]) put(key string, val V, valueCost int64) {
	cost := int64(len(key)) + valueCost + lruEntryOverhead
	if cost > l.max {
		return
	}
	l.remove(key)
	l.byKey[key] = l.order.PushFront(&lruEntry[V]{key: key, val: val, cost: cost})
	l.used += cost
	for l.used > l.max {
		l.removeElement(l.order.Back())
	}
}

// remove drops key if present.
func (l *byteLRU[V]) remove(key string) {
	if e, ok := l.byKey[key]; ok {
		l.removeElement(e)
	}
}

func (l *byteLRU[V]) removeElement(e *list.Element) {
	ent := l.order.Remove(e).(*lruEntry[V])
	delete(l.byKey, ent.key)
	l.used -= ent.cost
}

// clear drops every entry.
func (l *byteLRU[V]) clear() {
	l.order.Init()
	l.byKey = map[string]*list.Element{}
	l.used = 0
}

// len is the number of entries.
func (l *byteLRU[V]) len() int { return len(l.byKey) }
