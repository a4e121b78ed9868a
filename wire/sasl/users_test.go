package sasl

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestScramCredentialFromSaltedMatchesPassword(t *testing.T) {
	salt := []byte("0123456789abcdef")
	want, err := ScramCredentialWithSalt(ScramSHA512, "pw", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	salted, err := pbkdf2.Key(sha512.New, "pw", salt, 4096, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ScramCredentialFromSalted(ScramSHA512, salted, salt, 4096)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("from the salted password: %+v %v, want %+v", got, err, want)
	}
	for name, c := range map[string]struct {
		mech   string
		salted []byte
		salt   []byte
		iter   int
	}{
		"few iterations":  {ScramSHA512, salted, salt, 4095},
		"many iterations": {ScramSHA512, salted, salt, 16385},
		"not SCRAM":       {Plain, salted, salt, 4096},
	} {
		if _, err := ScramCredentialFromSalted(c.mech, c.salted, c.salt, c.iter); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// As Kafka's controller, a salted password of another size than the
	// hash's, or no salt, is stored as given (no login proves it).
	for name, c := range map[string]struct{ salted, salt []byte }{"short salted password": {salted[:32], salt}, "no salt": {salted, nil}} {
		got, err := ScramCredentialFromSalted(ScramSHA512, c.salted, c.salt, 4096)
		if err != nil || len(got.StoredKey) != sha512.Size || len(got.ServerKey) != sha512.Size || !bytes.Equal(got.Salt, c.salt) {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
}

func TestApplyAndOverlay(t *testing.T) {
	base := &Credentials{Users: map[string]map[string]ScramCredential{"file-user": {ScramSHA256: {Iterations: 4096}}}}
	next := Apply(base, []Alteration{
		{User: "a", Mech: ScramSHA256, Cred: ScramCredential{Iterations: 5000}},
		{User: "file-user", Mech: ScramSHA256, Delete: true},
	})
	if _, ok := next.Users["file-user"]; ok || next.Users["a"][ScramSHA256].Iterations != 5000 {
		t.Fatalf("Apply: %+v", next.Users)
	}
	if len(base.Users["file-user"]) != 1 {
		t.Fatal("Apply changed its input")
	}
	store := &Overlay{Store: &fakeStore{c: &Credentials{}}, Base: base, BaseContent: func() *Credentials { return base }}
	if err := store.Alter(context.Background(), []Alteration{{User: "file-user", Mech: ScramSHA256, Delete: true}}); err == nil || !strings.Contains(err.Error(), "credentials file") {
		t.Fatalf("deleting a file user through the overlay: %v", err)
	}
	if err := store.Alter(context.Background(), []Alteration{{User: "file-user", Mech: ScramSHA512, Cred: ScramCredential{Iterations: 9000}}}); err != nil {
		t.Fatal(err)
	}
	// The store's credentials of a user replace the file's.
	if _, ok := store.Lookup("file-user", ScramSHA256); ok {
		t.Fatal("file credential still served once the store holds the user")
	}
	if c, ok := store.Lookup("file-user", ScramSHA512); !ok || c.Iterations != 9000 {
		t.Fatalf("store credential: %+v %v", c, ok)
	}
}

type fakeStore struct{ c *Credentials }

func (f *fakeStore) Lookup(u, m string) (ScramCredential, bool) { return f.c.Lookup(u, m) }
func (f *fakeStore) Content() *Credentials                      { return f.c }
func (f *fakeStore) Alter(_ context.Context, alts []Alteration) error {
	f.c = Apply(f.c, alts)
	return nil
}

func TestFileStoreAlter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.json")
	cred, err := NewScramCredential(ScramSHA256, "pw", 4096)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(Credentials{Users: map[string]map[string]ScramCredential{"alice": {ScramSHA256: cred}}})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Alter(context.Background(), []Alteration{{User: "bob", Mech: ScramSHA256, Cred: cred}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Lookup("bob", ScramSHA256); !ok {
		t.Fatal("bob not served right after Alter")
	}
	reopened, err := OpenFile(path, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if _, ok := reopened.Lookup(u, ScramSHA256); !ok {
			t.Fatalf("%s not in the rewritten file", u)
		}
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v", st.Mode())
	}

	// A write that fails is returned, not taken for done: the file's name
	// is now a directory the new file cannot be renamed over.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Alter(context.Background(), []Alteration{{User: "carol", Mech: ScramSHA256, Cred: cred}}); err == nil {
		t.Fatal("Alter reported a failed write as done")
	}
}
