package conn

import (
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
	"github.com/kaas-project/kaas/storage/delegation"
)

// Delegation tokens (KIP-48, keys 38-41): the rules are storage/delegation's;
// the handlers check what only the connection knows (how it authenticated)
// and run the store's I/O off the connection actor.

// tokenRequestsAllowed is Kafka's rule for every token API: not on a
// PLAINTEXT listener, not from an unauthenticated SSL client, not on a
// connection a token authenticated (a token cannot beget tokens).
func tokenRequestsAllowed(s Session) bool {
	switch {
	case s.TokenAuthenticated, s.SecurityProtocol == ProtocolPlaintext:
		return false
	case s.SecurityProtocol == ProtocolSSL && s.Principal == AnonymousPrincipal:
		return false
	}
	return true
}

// tokenCode is a token operation's error code.
func tokenCode(err error) int16 {
	var e *delegation.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return kerr.KafkaStorageError.Code
}

// splitPrincipal splits "User:alice" into its type and name.
func splitPrincipal(p string) (string, string) {
	typ, name, _ := strings.Cut(p, ":")
	return typ, name
}

// describableToken is Kafka's DelegationTokenManager.filterToken: a token
// asked for (owners nil: every one; else one an owner in owners owns or
// renews) that the requester owns or renews, or may describe (DESCRIBE on
// the token, or DESCRIBE_TOKENS on its owner's user).
func describableToken(a *acl.Authorizer, s Session, owners []string, t delegation.Token) bool {
	if owners != nil {
		asked := false
		for _, o := range owners {
			asked = asked || t.OwnerOrRenewer(o)
		}
		if !asked {
			return false
		}
	}
	if t.OwnerOrRenewer(s.Principal) {
		return true
	}
	act := acl.Action{Principal: s.Principal, Host: s.ClientHost, Operation: kmsg.ACLOperationDescribe,
		ResourceType: kmsg.ACLResourceTypeDelegationToken, ResourceName: t.ID}
	if a.Authorize(act) {
		return true
	}
	act.Operation, act.ResourceType, act.ResourceName = kmsg.ACLOperationDescribeTokens, kmsg.ACLResourceTypeUser, t.Owner
	return a.Authorize(act)
}
