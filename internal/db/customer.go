package db

import (
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/predicate"
)

// Customer is the predicate of an integration's customer by its external user id: the key
// (integration, EU) every lookup of a caller's customer goes by, unique in external_users.
func Customer(integrationID, eu string) predicate.ExternalUser {
	return externaluser.And(externaluser.IntegrationID(integrationID), externaluser.ExternalUserID(eu))
}
