package delegation

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/wire/sasl"
)

var t0 = time.UnixMilli(1_700_000_000_000)

func testConfig() Config {
	c := Config{SecretKey: []byte("secret"), MaxLifetime: 10 * time.Hour, RenewTime: time.Hour}
	c.Defaults()
	return c
}

func code(err error) int16 {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestTokenRules: Kafka's DelegationTokenManager rules, step by step in
// virtual time.
func TestTokenRules(t *testing.T) {
	c := testConfig()
	if _, err := Create(Config{}, t0, "User:a", "User:a", nil, 0); code(err) != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("create without a secret: %v", err)
	}
	tok, err := Create(c, t0, "User:a", "User:req", []string{"User:r"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tok.IssueMs != t0.UnixMilli() || tok.ExpiryMs != t0.Add(time.Hour).UnixMilli() || tok.MaxMs != t0.Add(10*time.Hour).UnixMilli() {
		t.Fatalf("times %+v", tok)
	}
	short, _ := Create(c, t0, "User:a", "User:a", nil, (30 * time.Minute).Milliseconds())
	if short.MaxMs != t0.Add(30*time.Minute).UnixMilli() || short.ExpiryMs != short.MaxMs {
		t.Fatalf("max lifetime 30 min: %+v", short)
	}
	long, _ := Create(c, t0, "User:a", "User:a", nil, (100 * time.Hour).Milliseconds())
	if long.MaxMs != tok.MaxMs {
		t.Fatalf("a max lifetime above the broker's is capped: %+v", long)
	}
	// The token's SCRAM credential takes the HMAC as password.
	for _, mech := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		want, _ := sasl.ScramCredentialWithSalt(mech, Password(c.HMAC(tok.ID)), tok.Scram[mech].Salt, sasl.MinIterations)
		if string(want.StoredKey) != string(tok.Scram[mech].StoredKey) {
			t.Fatalf("%s credential is not the HMAC's", mech)
		}
	}
	tokens := []Token{tok, short}
	mac := c.HMAC(tok.ID)
	for _, tc := range []struct {
		name      string
		mac       []byte
		principal string
		at        time.Time
		want      int16
	}{
		{"unknown hmac", c.HMAC("nope"), "User:a", t0, kerr.DelegationTokenNotFound.Code},
		{"a stranger", mac, "User:x", t0, kerr.DelegationTokenOwnerMismatch.Code},
		{"past its maximum", mac, "User:a", t0.Add(11 * time.Hour), kerr.DelegationTokenExpired.Code},
		{"expired, not swept", mac, "User:a", t0.Add(2 * time.Hour), kerr.DelegationTokenExpired.Code},
		{"the owner", mac, "User:a", t0, 0},
		{"the requester", mac, "User:req", t0, 0},
		{"a renewer", mac, "User:r", t0, 0},
	} {
		if _, _, err := Renew(c, tokens, tc.mac, tc.principal, -1, tc.at); code(err) != tc.want {
			t.Errorf("renew, %s: %v, want %d", tc.name, err, tc.want)
		}
		if _, _, err := Expire(c, tokens, tc.mac, tc.principal, 0, tc.at); code(err) != tc.want {
			t.Errorf("expire, %s: %v, want %d", tc.name, err, tc.want)
		}
	}
	renewed, exp, err := Renew(c, tokens, mac, "User:r", -1, t0.Add(30*time.Minute))
	if err != nil || exp != t0.Add(90*time.Minute).UnixMilli() || renewed[0].ExpiryMs != exp || tokens[0].ExpiryMs == exp {
		t.Fatalf("renew by the default period: %d (%v); the input changed: %v", exp, err, tokens[0].ExpiryMs == exp)
	}
	if _, exp, _ := Renew(c, tokens, mac, "User:a", (20 * time.Hour).Milliseconds(), t0); exp != tok.MaxMs {
		t.Fatalf("renew past the maximum: %d, want the maximum %d", exp, tok.MaxMs)
	}
	later, exp, _ := Expire(c, tokens, mac, "User:a", (5 * time.Minute).Milliseconds(), t0)
	if exp != t0.Add(5*time.Minute).UnixMilli() || len(later) != 2 {
		t.Fatalf("expire in 5 min: %d, %d tokens", exp, len(later))
	}
	if live := Kept(later, t0.Add(6*time.Minute), 0); len(live) != 1 || live[0].ID != short.ID {
		t.Fatalf("after 6 min live tokens %v", live)
	}
	if kept := Kept(later, t0.Add(6*time.Minute), time.Minute); len(kept) != 2 {
		t.Fatalf("expired a minute ago, swept after a minute: %d tokens kept, want 2", len(kept))
	}
	gone, exp, _ := Expire(c, tokens, mac, "User:a", -1, t0)
	if exp != t0.UnixMilli() || len(gone) != 1 || gone[0].ID != short.ID {
		t.Fatalf("expire now: %d, %v", exp, gone)
	}
}

// TestStores: both stores keep what Update stores, drop expired tokens,
// leave everything as it was when the change fails, and (the file store)
// keep every token of concurrent creators.
func TestStores(t *testing.T) {
	c := testConfig()
	for name, s := range map[string]*Store{"memory": NewMemory(), "file": NewFile(t.TempDir())} {
		t.Run(name, func(t *testing.T) {
			s.Sweep = time.Hour
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tok, err := Create(c, t0, "User:a", "User:a", nil, 0)
					if err != nil {
						t.Error(err)
						return
					}
					if err := s.Update(t0, func(ts []Token) ([]Token, error) { return append(ts, tok), nil }); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			tokens, err := s.Load(t0)
			if err != nil || len(tokens) != 8 {
				t.Fatalf("%d tokens (%v), want 8", len(tokens), err)
			}
			if got, ok := s.Lookup(tokens[3].ID, sasl.ScramSHA512, t0); !ok || got.Owner != "User:a" {
				t.Fatalf("lookup: %+v %v", got, ok)
			}
			boom := errors.New("boom")
			if err := s.Update(t0, func([]Token) ([]Token, error) { return nil, boom }); err != boom {
				t.Fatalf("failed change: %v", err)
			}
			if again, _ := s.Load(t0); len(again) != 8 {
				t.Fatalf("a failed change stored %d tokens", len(again))
			}
			// Expired at 1 h, swept an hour later: kept meanwhile, but
			// never authenticating.
			if late, _ := s.Load(t0.Add(90 * time.Minute)); len(late) != 8 {
				t.Fatalf("%d tokens kept before the sweep, want 8", len(late))
			}
			if _, ok := s.Lookup(tokens[3].ID, sasl.ScramSHA512, t0.Add(90*time.Minute)); ok {
				t.Fatal("an expired token looked up")
			}
			err = s.Update(t0.Add(90*time.Minute), func(ts []Token) ([]Token, error) {
				_, _, err := Renew(c, ts, c.HMAC(tokens[3].ID), "User:a", -1, t0.Add(90*time.Minute))
				return ts, err
			})
			if code(err) != kerr.DelegationTokenExpired.Code {
				t.Fatalf("renewing an expired token: %v, want DELEGATION_TOKEN_EXPIRED", err)
			}
			if swept, _ := s.Load(t0.Add(3 * time.Hour)); len(swept) != 0 {
				t.Fatalf("%d tokens past the sweep", len(swept))
			}
		})
	}
}

// TestFileStoreSharedByBrokers: two stores on one directory, as two
// brokers on the shared volume: a token created through one is found by
// the other, and their concurrent creations are all kept.
func TestFileStoreSharedByBrokers(t *testing.T) {
	c := testConfig()
	dir := t.TempDir()
	a, b := NewFile(dir), NewFile(dir)
	var wg sync.WaitGroup
	for i := range 10 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := Create(c, t0, "User:a", "User:a", nil, 0)
			if err == nil {
				err = s.Update(t0, func(ts []Token) ([]Token, error) { return append(ts, tok), nil })
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	ta, _ := a.Load(t0)
	tb, _ := b.Load(t0)
	if len(ta) != 10 || len(tb) != 10 {
		t.Fatalf("stores hold %d and %d tokens, want 10", len(ta), len(tb))
	}
	if _, owner, _, ok := (SASL{Store: b, Now: func() time.Time { return t0 }}).LookupToken(ta[0].ID, sasl.ScramSHA256); !ok || owner != "User:a" {
		t.Fatal("a token created through one store is not found through the other")
	}
}
