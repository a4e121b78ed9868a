package conn

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/wire/sasl"
)

// DescribeUserScramCredentials (key 50): v0. Answers each user's SCRAM
// mechanisms and iteration counts (never salts or keys) from the credential
// store; no users asked (null or empty) means every user. Without a store
// it answers SECURITY_DISABLED.
func init() {
	serve(API{Key: kmsg.DescribeUserSCRAMCredentials.Int16(), MinVersion: 0, MaxVersion: 0, Handle: handleDescribeUserScram})
}

func handleDescribeUserScram(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	if r.Server.ScramUsers == nil {
		resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, optString(noScramStoreMessage)
		return Ready(resp)
	}
	return Ready(describeScram(req, r.Server.ScramUsers.Content()))
}

const noScramStoreMessage = "no SCRAM credential store on this broker (a --sasl-credentials-file, or a SASL listener in cluster mode)"

// describeScram answers req from c, as Kafka does: a user asked twice is
// DUPLICATE_RESOURCE, one without credentials RESOURCE_NOT_FOUND.
func describeScram(req *kmsg.DescribeUserSCRAMCredentialsRequest, c *sasl.Credentials) *kmsg.DescribeUserSCRAMCredentialsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	var names []string
	if len(req.Users) == 0 {
		if c != nil {
			for u := range c.Users {
				names = append(names, u)
			}
		}
		slices.Sort(names)
	} else {
		for _, u := range req.Users {
			names = append(names, u.Name)
		}
	}
	seen := map[string]int{}
	for _, n := range names {
		seen[n]++
	}
	answered := map[string]bool{}
	for _, n := range names {
		if answered[n] {
			continue
		}
		answered[n] = true
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = n
		switch {
		case seen[n] > 1:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = optString("user " + n + " asked more than once")
		case c == nil || len(c.Users[n]) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = optString("attempt to describe nonexistent user " + n)
		default:
			for _, mech := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
				if cred, ok := c.Users[n][mech]; ok {
					info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
					info.Mechanism, info.Iterations = sasl.CodeOfMechanism(mech), int32(cred.Iterations)
					res.CredentialInfos = append(res.CredentialInfos, info)
				}
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}
