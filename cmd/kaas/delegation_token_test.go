package main

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kaas-project/kaas/storage/delegation"
)

// TestDelegationTokens: a SCRAM user creates a delegation token (keys
// 38-41, KIP-48) and a second franz-go client logs in with it (SCRAM with
// tokenauth: the token id and its HMAC) as the token's owner, produces and
// consumes where only the owner may; the owner and a renewer describe and
// renew it, a stranger may not; a token-authenticated connection and a
// PLAINTEXT one may not ask for tokens; once expired the token is gone and
// no longer logs in. Without a secret key tokens are disabled.
func TestDelegationTokens(t *testing.T) {
	e := newSecureEnv(t, "--delegation-token-secret-key", "test-secret", "--authorizer", "acl", "--super-users", "User:alice")
	alice := secureClient(t, e.saslPlaintext, kgo.SASL(scramMech("alice", "alice-secret", true)))
	bob := secureClient(t, e.saslPlaintext, kgo.SASL(scramMech("bob", "bob-secret", false)))

	create := func(cl *kgo.Client, renewers ...string) *kmsg.CreateDelegationTokenResponse {
		t.Helper()
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		for _, r := range renewers {
			rn := kmsg.NewCreateDelegationTokenRequestRenewer()
			rn.PrincipalType, rn.PrincipalName = "User", r
			req.Renewers = append(req.Renewers, rn)
		}
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	before := time.Now()
	tok := create(alice, "bob")
	if tok.ErrorCode != 0 || tok.TokenID == "" || len(tok.HMAC) != 64 || tok.PrincipalName != "alice" || tok.TokenRequesterPrincipalName != "alice" {
		t.Fatalf("create: %+v", tok)
	}
	if life := time.Duration(tok.ExpiryTimestamp-tok.IssueTimestamp) * time.Millisecond; life != 24*time.Hour ||
		time.Duration(tok.MaxTimestamp-tok.IssueTimestamp)*time.Millisecond != 7*24*time.Hour || tok.IssueTimestamp < before.UnixMilli() {
		t.Fatalf("times: issue %d expiry %d max %d", tok.IssueTimestamp, tok.ExpiryTimestamp, tok.MaxTimestamp)
	}

	// The token logs in as alice: only alice (a super user) may create the
	// topic, produce and consume.
	tokenAuth := scram.Auth{User: tok.TokenID, Pass: delegation.Password(tok.HMAC), IsToken: true}
	viaToken := secureClient(t, e.saslPlaintext, kgo.SASL(tokenAuth.AsSha256Mechanism()))
	if err := roundTrip(t, viaToken, "dt-topic"); err != nil {
		t.Fatalf("produce and consume with the token: %v", err)
	}
	if err := roundTrip(t, bob, "dt-topic-bob"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	describe := func(cl *kgo.Client) *kmsg.DescribeDelegationTokenResponse {
		t.Helper()
		resp, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := describe(viaToken); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("describe over the token's connection: code %d, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", r.ErrorCode)
	}
	if r := describe(secureClient(t, e.plain)); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("describe over PLAINTEXT: code %d, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", r.ErrorCode)
	}
	for name, cl := range map[string]*kgo.Client{"alice": alice, "bob (a renewer)": bob} {
		r := describe(cl)
		if r.ErrorCode != 0 || len(r.TokenDetails) != 1 || r.TokenDetails[0].TokenID != tok.TokenID ||
			string(r.TokenDetails[0].HMAC) != string(tok.HMAC) || len(r.TokenDetails[0].Renewers) != 1 {
			t.Fatalf("describe as %s: %+v", name, r)
		}
	}

	renew := func(cl *kgo.Client, mac []byte, period time.Duration) *kmsg.RenewDelegationTokenResponse {
		t.Helper()
		req := kmsg.NewPtrRenewDelegationTokenRequest()
		req.HMAC, req.RenewTimeMillis = mac, period.Milliseconds()
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := renew(bob, tok.HMAC, time.Hour); r.ErrorCode != 0 || r.ExpiryTimestamp > time.Now().Add(time.Hour).UnixMilli() || r.ExpiryTimestamp < before.Add(time.Hour).UnixMilli() {
		t.Fatalf("renew by the renewer: %+v", r)
	}
	bobs := create(bob)
	if r := renew(alice, bobs.HMAC, time.Hour); r.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("alice renews bob's token: code %d, want DELEGATION_TOKEN_OWNER_MISMATCH", r.ErrorCode)
	}
	if r := renew(alice, []byte("not a token"), time.Hour); r.ErrorCode != kerr.DelegationTokenNotFound.Code {
		t.Fatalf("renew of an unknown HMAC: code %d", r.ErrorCode)
	}
	if r := describe(bob); len(r.TokenDetails) != 2 {
		t.Fatalf("bob describes %d tokens, want his and the one he renews", len(r.TokenDetails))
	}

	expire := kmsg.NewPtrExpireDelegationTokenRequest()
	expire.HMAC, expire.ExpiryPeriodMillis = tok.HMAC, -1
	if r, err := expire.RequestWith(ctxT(t, 10*time.Second), alice); err != nil || r.ErrorCode != 0 {
		t.Fatalf("expire: %v %+v", err, r)
	}
	if r := describe(alice); len(r.TokenDetails) != 1 || r.TokenDetails[0].TokenID != bobs.TokenID {
		t.Fatalf("after the expiry alice describes %+v", r.TokenDetails)
	}
	again := secureClient(t, e.saslPlaintext, kgo.SASL(tokenAuth.AsSha256Mechanism()))
	if err := again.Ping(ctxT(t, 10*time.Second)); err == nil {
		t.Fatal("an expired token still logs in")
	}
	// Expired by a zero period, bob's token is kept until the sweep (an
	// hour): still described, but renewing it answers
	// DELEGATION_TOKEN_EXPIRED.
	expire.HMAC, expire.ExpiryPeriodMillis = bobs.HMAC, 0
	if r, err := expire.RequestWith(ctxT(t, 10*time.Second), bob); err != nil || r.ErrorCode != 0 {
		t.Fatalf("expire now: %v %+v", err, r)
	}
	waitUntil(t, 10*time.Second, "bob's token past its expiry", func() bool {
		r := describe(bob)
		return len(r.TokenDetails) == 1 && r.TokenDetails[0].ExpiryTimestamp < time.Now().UnixMilli()
	})
	if r := renew(bob, bobs.HMAC, time.Hour); r.ErrorCode != kerr.DelegationTokenExpired.Code {
		t.Fatalf("renew of an expired token: code %d, want DELEGATION_TOKEN_EXPIRED", r.ErrorCode)
	}

	off := newSecureEnv(t)
	r, err := kmsg.NewPtrCreateDelegationTokenRequest().RequestWith(ctxT(t, 10*time.Second),
		secureClient(t, off.saslPlaintext, kgo.SASL(scramMech("alice", "alice-secret", true))))
	if err != nil || r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("create without a secret key: %v code %d, want DELEGATION_TOKEN_AUTH_DISABLED", err, r.ErrorCode)
	}
}
