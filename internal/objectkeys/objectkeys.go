// Package objectkeys is the layout of the object store, spelled once: every object the product
// writes lives under its integration and customer,
//
//	i/<integration id>/u/<customer record id>/<kind>/<id>/<file>
//
// (kinds: the upload kinds, clone, rendition), so a prefix check is the tenancy check and a
// customer's or an integration's objects are one listing away.
package objectkeys

// Folder kinds the product writes besides the upload kinds.
const (
	// KindClone holds a clone job's copies.
	KindClone = "clone"
	// KindRendition holds a scene's rendition.
	KindRendition = "rendition"
)

// Integration is the prefix of every object of an integration.
func Integration(integrationID string) string { return "i/" + integrationID + "/" }

// Customer is the prefix of every object of a customer (by record id, not external id: an
// external id can be reused after a deletion, a record id never is).
func Customer(integrationID, customerRecordID string) string {
	return Integration(integrationID) + "u/" + customerRecordID + "/"
}

// Folder is the folder of one upload, clone or rendition: kind and id under the customer.
func Folder(integrationID, customerRecordID, kind, id string) string {
	return Customer(integrationID, customerRecordID) + kind + "/" + id + "/"
}

// CloneFolder is where every object of one clone lives: under the cloning customer's key space
// (so the customer deletion purges it too), in a folder of its own named by the job — the id
// the new scene gets — so a rollback removes exactly what the job copied by emptying it.
func CloneFolder(integrationID, customerRecordID, jobID string) string {
	return Folder(integrationID, customerRecordID, KindClone, jobID)
}

// RenditionFolder is where a scene's renditions live: under its owner's key space (so the
// customer's deletion finds them like every other object of the scene), in a folder named by
// the scene, which the asset route maps back to the scene for its access rules.
func RenditionFolder(integrationID, ownerRecordID, sceneID string) string {
	return Folder(integrationID, ownerRecordID, KindRendition, sceneID)
}
