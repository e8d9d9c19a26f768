package contract

// DeleteObjectsInput names the objects to remove: single keys, and prefixes (folders) whose
// every object goes.
type DeleteObjectsInput struct {
	Keys     []string
	Prefixes []string
}

// DeleteObjectsResult counts the objects removed, including those already absent.
type DeleteObjectsResult struct {
	Deleted int
}

// DeleteProgress is DeleteObjects' heartbeat: how far it got. A retried attempt resumes from
// it. A prefix is counted done only once it is empty, so a resumed attempt lists the current
// prefix again; what was deleted no longer shows up.
type DeleteProgress struct {
	KeysDone     int
	PrefixesDone int
	Deleted      int
}
