package splathost

import (
	"context"
	"fmt"
	"iter"
)

// Iterators over the lists, for range-over-func loops:
//
//	for s, err := range c.AllSplats(ctx, splathost.ListSplatsOptions{ExternalUserID: "customer-42"}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(s.ID, s.Title)
//	}
//
// Each fetches a page only when the loop reaches it and stops fetching when the loop breaks. A
// failed page ends the iteration with one (zero item, error) pair; the pages before it were
// yielded in full. Each page is one call of the List method beside it, retried by the same rules.

// AllSplats iterates over every scene ListSplats would page through for o, following
// nextCursor from o.Cursor (the first page when empty) to the last page. o.Limit is the page
// size (the service's default when 0).
func (c *Client) AllSplats(ctx context.Context, o ListSplatsOptions) iter.Seq2[Splat, error] {
	return pages(o.Cursor, func(cursor string) ([]Splat, string, error) {
		o.Cursor = cursor
		page, err := c.ListSplats(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return page.Splats, page.NextCursor, nil
	})
}

// AllWebhookDeliveries iterates over every delivery of the endpoint, newest first, as
// WebhookDeliveryLog pages them; pageSize 0 takes the service's default.
func (c *Client) AllWebhookDeliveries(ctx context.Context, webhookID string, pageSize int) iter.Seq2[WebhookDelivery, error] {
	return pages("", func(cursor string) ([]WebhookDelivery, string, error) {
		page, err := c.WebhookDeliveryLog(ctx, webhookID, pageSize, cursor)
		if err != nil {
			return nil, "", err
		}
		next := ""
		if page.NextCursor != nil {
			next = *page.NextCursor
		}
		return page.Deliveries, next, nil
	})
}

// AllTrendingSplats iterates over the ranking TrendingSplats returns for o. The service ranks
// in one answer of at most o.Limit scenes (it has no cursor), so this is one call; it is here so
// every list reads the same way.
func (c *Client) AllTrendingSplats(ctx context.Context, o TrendingOptions) iter.Seq2[TrendingSplat, error] {
	return pages("", func(string) ([]TrendingSplat, string, error) {
		t, err := c.TrendingSplats(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return t.Splats, "", nil
	})
}

// pages yields the items of every page fetch returns, from the page of cursor on, until a page
// has no next cursor, fetch fails (its error is the last pair) or the loop stops. A next cursor
// equal to the one just used would repeat the page for ever, so it is an error.
func pages[T any](cursor string, fetch func(cursor string) (items []T, next string, err error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		for {
			items, next, err := fetch(cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			if next == cursor {
				yield(zero, fmt.Errorf("splathost: the service answered the cursor %q it was sent as the next one", cursor))
				return
			}
			cursor = next
		}
	}
}
