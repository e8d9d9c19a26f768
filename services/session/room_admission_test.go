package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/roomproto"
)

// TestMayJoin: a viewer session and an inactive customer's session are refused with 403 (4403
// on the socket); an editor session of an active customer or a guest is not.
func TestMayJoin(t *testing.T) {
	require.NoError(t, mayJoin(joinRequest{session: &session{}}))
	require.Equal(t, 403, apperr.From(mayJoin(joinRequest{session: &session{viewerOnly: true}})).Status)
	err := apperr.From(mayJoin(joinRequest{session: &session{scoped: true}, customerInactive: true}))
	require.Equal(t, 403, err.Status)
	require.Equal(t, "CUSTOMER_INACTIVE", err.Extra["code"])
}

// TestRoomSceneID: splatId is required (400), a malformed one names no scene (404), and ids are
// lower-cased.
func TestRoomSceneID(t *testing.T) {
	id, err := roomSceneID("ABCDEF0123456789ABCDEF01")
	require.NoError(t, err)
	require.Equal(t, "abcdef0123456789abcdef01", id)
	_, err = roomSceneID("")
	require.Equal(t, 400, apperr.From(err).Status)
	_, err = roomSceneID("nope")
	require.Equal(t, 404, apperr.From(err).Status)
}

// TestAdmissionOf: the owner's scoped session and the scene's coEdit session may edit, anyone else is
// admitted read-only; a guest carries no customer, and the profile is shown as given.
func TestAdmissionOf(t *testing.T) {
	sc := &ent.Scene{ID: "s1", OwnerID: "C"}
	exp := time.Unix(1_800_000_000, 0)
	owner := &session{integrationID: "I", productSlug: "p", scoped: true, sub: "C", eu: "eu-c"}
	adm := admissionOf(joinRequest{session: owner, publicKey: "mpk_a", expires: exp, name: "Ada", avatar: "https://x.example/a.png"}, sc)
	require.Equal(t, roomproto.Key("I", "s1"), adm.room)
	require.Equal(t, rights{integrationID: "I", publicKey: "mpk_a", productSlug: "p", sceneID: "s1", eu: "eu-c", sub: "C", canEdit: true, expires: exp}, adm.rights)
	require.Equal(t, "Ada", adm.name)
	require.Equal(t, "https://x.example/a.png", *adm.avatar)

	other := admissionOf(joinRequest{session: &session{integrationID: "I", scoped: true, sub: "D", eu: "eu-d"}}, sc)
	require.False(t, other.rights.canEdit)
	require.Equal(t, "D", other.rights.sub)

	// A guest's sub names the integration's account, never a customer: even one equal to the
	// owner's id owns nothing.
	guest := admissionOf(joinRequest{session: &session{integrationID: "I", sub: "C"}}, sc)
	require.False(t, guest.rights.canEdit)
	require.Empty(t, guest.rights.sub, "a guest's sub is the account, never a customer")
	require.Empty(t, guest.name)
	require.Nil(t, guest.avatar)

	// A coEdit grant is bound to the scene named at minting: another room it may see admits it
	// read-only.
	require.True(t, admissionOf(joinRequest{session: &session{integrationID: "I", coEdit: true, splatID: "s1"}}, sc).rights.canEdit)
	require.False(t, admissionOf(joinRequest{session: &session{integrationID: "I", coEdit: true, splatID: "s2"}}, sc).rights.canEdit)
	require.False(t, admissionOf(joinRequest{session: &session{integrationID: "I", coEdit: true}}, sc).rights.canEdit)

	// Sockets count against the customer of a scoped session, else against the session.
	require.Equal(t, "customer:C", adm.holder)
	require.Equal(t, "session:sid1", admissionOf(joinRequest{session: &session{integrationID: "I"}, sessionID: "sid1"}, sc).holder)
	require.Empty(t, guest.holder, "a session without an id counts against nothing")
}

// TestNewestGuest: the seat an editor takes is the newest one without an editor's seat; a room
// of editors has none to give.
func TestNewestGuest(t *testing.T) {
	peer := func(id string, canEdit bool) seated { return seated{Peer: Peer{ID: id}, canEdit: canEdit} }
	require.Equal(t, 1, newestGuest([]seated{peer("a", false), peer("b", false), peer("c", true)}))
	require.Equal(t, 0, newestGuest([]seated{peer("a", false), peer("b", true)}))
	require.Equal(t, -1, newestGuest([]seated{peer("a", true), peer("b", true)}))
	require.Equal(t, -1, newestGuest(nil))
}
