package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kaas-project/kaas/wire/sasl"
)

// KafkaUserGVR is the KafkaUser custom resource: one SCRAM user's salted
// credentials per object.
var KafkaUserGVR = schema.GroupVersionResource{Group: "kaas.dev", Version: "v1alpha1", Resource: "kafkausers"}

// userSpecFields maps each SCRAM mechanism to its KafkaUser spec field.
var userSpecFields = map[string]string{sasl.ScramSHA256: "scramSha256", sasl.ScramSHA512: "scramSha512"}

// UserObjectName is the name AlterUserScramCredentials gives a new user's
// KafkaUser: a hash of the user name (Kafka user names need not be valid
// Kubernetes names). Objects applied by hand may have any name.
func UserObjectName(user string) string {
	sum := sha256.Sum256([]byte(user))
	return "user-" + hex.EncodeToString(sum[:10])
}

// UserFromObject reads a KafkaUser's spec: its user name and credentials.
func UserFromObject(u *unstructured.Unstructured) (string, map[string]sasl.ScramCredential, error) {
	user, _, err := unstructured.NestedString(u.Object, "spec", "user")
	if err != nil || user == "" {
		return "", nil, fmt.Errorf("KafkaUser %s: spec.user must be a non-empty string", u.GetName())
	}
	creds := map[string]sasl.ScramCredential{}
	for mech, field := range userSpecFields {
		m, found, err := unstructured.NestedMap(u.Object, "spec", field)
		if err != nil {
			return "", nil, fmt.Errorf("KafkaUser %s: spec.%s: %w", u.GetName(), field, err)
		}
		if !found {
			continue
		}
		var c sasl.ScramCredential
		for key, dst := range map[string]*[]byte{"salt": &c.Salt, "storedKey": &c.StoredKey, "serverKey": &c.ServerKey} {
			s, _ := m[key].(string)
			if *dst, err = base64.StdEncoding.DecodeString(s); err != nil {
				return "", nil, fmt.Errorf("KafkaUser %s: spec.%s.%s: %w", u.GetName(), field, key, err)
			}
		}
		switch n := m["iterations"].(type) {
		case int64:
			c.Iterations = int(n)
		case float64:
			c.Iterations = int(n)
		}
		creds[mech] = c
	}
	if err := (&sasl.Credentials{Users: map[string]map[string]sasl.ScramCredential{user: creds}}).Validate(); err != nil {
		return "", nil, fmt.Errorf("KafkaUser %s: %w", u.GetName(), err)
	}
	return user, creds, nil
}

// userSpec is the spec of a KafkaUser holding creds.
func userSpec(user string, creds map[string]sasl.ScramCredential) map[string]any {
	spec := map[string]any{"user": user}
	for mech, c := range creds {
		spec[userSpecFields[mech]] = map[string]any{
			"salt": base64.StdEncoding.EncodeToString(c.Salt), "iterations": int64(c.Iterations),
			"storedKey": base64.StdEncoding.EncodeToString(c.StoredKey), "serverKey": base64.StdEncoding.EncodeToString(c.ServerKey),
		}
	}
	return spec
}

// Users is the cluster-mode SCRAM credential store: it watches KafkaUser
// objects in its namespace (every broker logs users in from its own cache)
// and AlterUserScramCredentials writes them.
type Users struct {
	Dyn       dynamic.Interface
	Namespace string
	Log       zerolog.Logger

	mu      sync.Mutex
	content *sasl.Credentials
	objects map[string]string // user -> KafkaUser name holding it
	changed chan struct{}     // closed and replaced at every cache update
}

var _ sasl.UserStore = (*Users)(nil)

func (s *Users) res() dynamic.ResourceInterface {
	return s.Dyn.Resource(KafkaUserGVR).Namespace(s.Namespace)
}

// Watch starts the informer, returns once its cache has synced (or ctx
// ended), and keeps the cache current until ctx ends.
func (s *Users) Watch(ctx context.Context) error {
	s.mu.Lock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	return watchObjects(ctx, s.Dyn, KafkaUserGVR, s.Namespace, "KafkaUser", s.reload)
}

// reload rebuilds the cache from the informer's objects; bad remembers
// the invalid objects already logged. Two objects naming one user: the
// first by object name wins.
func (s *Users) reload(us []*unstructured.Unstructured, bad map[string]string) {
	content := &sasl.Credentials{Users: map[string]map[string]sasl.ScramCredential{}}
	objects := map[string]string{}
	for _, u := range us {
		user, creds, err := UserFromObject(u)
		if err == nil && objects[user] != "" {
			err = fmt.Errorf("KafkaUser %s: user %s is already defined by KafkaUser %s", u.GetName(), user, objects[user])
		}
		if err != nil {
			if bad[u.GetName()] != err.Error() {
				s.Log.Error().Err(err).Str("kafkauser", u.GetName()).Msg("invalid KafkaUser ignored")
				bad[u.GetName()] = err.Error()
			}
			continue
		}
		delete(bad, u.GetName())
		objects[user] = u.GetName()
		content.Users[user] = creds
	}
	s.mu.Lock()
	s.content, s.objects = content, objects
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Lookup implements sasl.CredentialStore.
func (s *Users) Lookup(user, mech string) (sasl.ScramCredential, bool) {
	return s.Content().Lookup(user, mech)
}

// Content implements sasl.UserStore.
func (s *Users) Content() *sasl.Credentials {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.content
}

// Alter implements sasl.UserStore: each user changed gets its KafkaUser
// created, updated or (left without credentials) deleted; it returns once
// this broker's cache holds the result.
func (s *Users) Alter(ctx context.Context, alts []sasl.Alteration) error {
	s.mu.Lock()
	next := sasl.Apply(s.content, alts)
	objects := maps.Clone(s.objects)
	s.mu.Unlock()
	users := map[string]bool{}
	for _, a := range alts {
		users[a.User] = true
	}
	var errs []error
	for user := range users {
		name, exists := objects[user]
		creds := next.Users[user]
		var err error
		switch {
		case len(creds) == 0 && exists:
			if err = s.res().Delete(ctx, name, metav1.DeleteOptions{}); apierrors.IsNotFound(err) {
				err = nil
			}
		case len(creds) == 0:
		case exists:
			var u *unstructured.Unstructured
			if u, err = s.res().Get(ctx, name, metav1.GetOptions{}); err == nil {
				u.Object["spec"] = userSpec(user, creds)
				_, err = s.res().Update(ctx, u, metav1.UpdateOptions{})
			}
		default:
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "kaas.dev/v1alpha1",
				"kind":       "KafkaUser",
				"metadata":   map[string]any{"name": UserObjectName(user), "namespace": s.Namespace},
				"spec":       userSpec(user, creds),
			}}
			_, err = s.res().Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("KafkaUser of %s: %w", user, err))
			delete(users, user)
		}
	}
	s.waitCache(ctx, func(have *sasl.Credentials) bool {
		for user := range users {
			if !reflect.DeepEqual(have.Users[user], next.Users[user]) && !(len(have.Users[user]) == 0 && len(next.Users[user]) == 0) {
				return false
			}
		}
		return true
	})
	return errors.Join(errs...)
}

// waitCache waits until done holds for the cache, or ctx ends.
func (s *Users) waitCache(ctx context.Context, done func(*sasl.Credentials) bool) {
	for {
		s.mu.Lock()
		ok, ch := done(s.content), s.changed
		s.mu.Unlock()
		if ok || ch == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}
