package user

import (
	"github.com/splathost/splathost/internal/customers"
	"github.com/splathost/splathost/internal/httpx"
)

// store is the user domain (internal/customers) over this service's database and outbox: the
// handlers parse, call one of its methods and render.
func (s *Service) store() *customers.Store {
	return &customers.Store{DB: s.db, Events: s.events}
}

// customerKey names the customer eu of the caller's integration.
func customerKey(caller *httpx.Caller, eu string) customers.Key {
	return customers.Key{IntegrationID: caller.IntegrationID, AccountID: caller.AccountID, ExternalUserID: eu}
}
