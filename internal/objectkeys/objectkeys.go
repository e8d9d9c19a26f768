// Package objectkeys is the layout of the object store, spelled once: every object the product
// writes lives under its integration and customer,
//
//	i/<integration id>/u/<owner id>/<kind>/<id>/<file>
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

// Customer is the prefix of every object of a customer, by its owner id (the customer's record
// id, scenes.owner_id), not its external id: an external id can be reused after a deletion, a
// record id never is.
func Customer(integrationID, ownerID string) string {
	return Integration(integrationID) + "u/" + ownerID + "/"
}

// Folder is the folder of one upload, clone or rendition: kind and id under the customer.
func Folder(integrationID, ownerID, kind, id string) string {
	return Customer(integrationID, ownerID) + kind + "/" + id + "/"
}

// CloneFolder is where every object of one clone lives: under the cloning customer's key space
// (so the customer deletion purges it too), in a folder of its own named by the id the new
// scene gets (splatID, the job's clone_jobs row), so a rollback removes exactly what the job
// copied by emptying it.
func CloneFolder(integrationID, ownerID, splatID string) string {
	return Folder(integrationID, ownerID, KindClone, splatID)
}

// RenditionFolder is where a scene's renditions live: under its owner's key space (so the
// customer's deletion finds them like every other object of the scene), in a folder named by
// the scene, which the asset route maps back to the scene for its access rules.
func RenditionFolder(integrationID, ownerID, sceneID string) string {
	return Folder(integrationID, ownerID, KindRendition, sceneID)
}
