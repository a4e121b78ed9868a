package conn

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/wire/sasl"
)

// AlterUserScramCredentials (key 51): v0. Upserts and deletes SCRAM
// credentials in the credential store (KafkaUser objects in cluster mode,
// every broker watching them, with a SASL listener; the credentials file
// otherwise). Without either it answers SECURITY_DISABLED.
// The client sends the salted password, never the password.
func init() {
	serve(API{Key: kmsg.AlterUserSCRAMCredentials.Int16(), MinVersion: 0, MaxVersion: 0, Handle: handleAlterUserScram, ErrorResponse: alterUserScramError})
}

func handleAlterUserScram(r *Request) Pending {
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	store := r.Server.ScramUsers
	if store == nil {
		resp := alterUserScramError(req, kerr.SecurityDisabled.Code).(*kmsg.AlterUserSCRAMCredentialsResponse)
		for i := range resp.Results {
			resp.Results[i].ErrorMessage = optString(noScramStoreMessage)
		}
		return Ready(resp)
	}
	alts, resp := planScramAlter(req, store.Content())
	if len(alts) == 0 {
		return Ready(resp)
	}
	log := r.Server.Log()
	return func() kmsg.Response {
		ctx, cancel := context.WithTimeout(context.Background(), aclStoreTimeout)
		defer cancel()
		if err := store.Alter(ctx, alts); err != nil {
			log.Warn().Err(err).Int("alterations", len(alts)).Msg("AlterUserScramCredentials")
			for i := range resp.Results {
				if resp.Results[i].ErrorCode == 0 {
					resp.Results[i].ErrorCode = kerr.UnknownServerError.Code
					resp.Results[i].ErrorMessage = optString(err.Error())
				}
			}
		}
		return resp
	}
}

// planScramAlter validates req against the current credentials c, as
// Kafka does, user by user: a user with any invalid change has none
// applied. It returns the alterations of the valid users and the response
// (one result per user, in the order first named).
func planScramAlter(req *kmsg.AlterUserSCRAMCredentialsRequest, c *sasl.Credentials) ([]sasl.Alteration, *kmsg.AlterUserSCRAMCredentialsResponse) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	type userPlan struct {
		alts      []sasl.Alteration
		code      int16
		msg       string
		mechsSeen map[string]bool
	}
	plans := map[string]*userPlan{}
	var order []string
	plan := func(user string) *userPlan {
		p, ok := plans[user]
		if !ok {
			p = &userPlan{mechsSeen: map[string]bool{}}
			plans[user] = p
			order = append(order, user)
		}
		return p
	}
	fail := func(p *userPlan, code int16, msg string) {
		if p.code == 0 {
			p.code, p.msg = code, msg
		}
	}
	check := func(user string, code int8) (*userPlan, string, bool) {
		p := plan(user)
		if user == "" {
			fail(p, kerr.UnacceptableCredential.Code, "username must not be empty")
			return p, "", false
		}
		mech, ok := sasl.MechanismOfCode(code)
		if !ok {
			fail(p, kerr.UnsupportedSaslMechanism.Code, fmt.Sprintf("unknown SCRAM mechanism %d", code))
			return p, "", false
		}
		if p.mechsSeen[mech] {
			fail(p, kerr.DuplicateResource.Code, fmt.Sprintf("%s of user %s altered more than once", mech, user))
			return p, "", false
		}
		p.mechsSeen[mech] = true
		return p, mech, true
	}
	for _, d := range req.Deletions {
		p, mech, ok := check(d.Name, d.Mechanism)
		if !ok {
			continue
		}
		if _, exists := c.Lookup(d.Name, mech); !exists {
			fail(p, kerr.ResourceNotFound.Code, fmt.Sprintf("attempt to delete a nonexistent %s credential of user %s", mech, d.Name))
			continue
		}
		p.alts = append(p.alts, sasl.Alteration{User: d.Name, Mech: mech, Delete: true})
	}
	for _, u := range req.Upsertions {
		p, mech, ok := check(u.Name, u.Mechanism)
		if !ok {
			continue
		}
		cred, err := sasl.ScramCredentialFromSalted(mech, u.SaltedPassword, u.Salt, int(u.Iterations))
		if err != nil {
			fail(p, kerr.UnacceptableCredential.Code, err.Error())
			continue
		}
		p.alts = append(p.alts, sasl.Alteration{User: u.Name, Mech: mech, Cred: cred})
	}
	var alts []sasl.Alteration
	for _, user := range order {
		p := plans[user]
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode = user, p.code
		if p.code != 0 {
			res.ErrorMessage = optString(p.msg)
		} else {
			alts = append(alts, p.alts...)
		}
		resp.Results = append(resp.Results, res)
	}
	return alts, resp
}

// alterUserScramError answers every user named with code.
func alterUserScramError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]bool{}
	add := func(user string) {
		if seen[user] {
			return
		}
		seen[user] = true
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode = user, code
		resp.Results = append(resp.Results, res)
	}
	for _, d := range req.Deletions {
		add(d.Name)
	}
	for _, u := range req.Upsertions {
		add(u.Name)
	}
	return resp
}
