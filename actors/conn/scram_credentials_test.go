package conn

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/wire/sasl"
)

func TestPlanScramAlter(t *testing.T) {
	have := &sasl.Credentials{Users: map[string]map[string]sasl.ScramCredential{
		"alice": {sasl.ScramSHA256: {Iterations: 4096}},
	}}
	del := func(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = user, mech
		return d
	}
	up := func(user string, mech int8, iter int32, saltedLen int) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, mech, iter, []byte("salt"), bytes.Repeat([]byte{7}, saltedLen)
		return u
	}
	for _, tc := range []struct {
		name  string
		dels  []kmsg.AlterUserSCRAMCredentialsRequestDeletion
		ups   []kmsg.AlterUserSCRAMCredentialsRequestUpsertion
		codes string // user=code per result, in order
		alts  string // user/mech/delete per alteration
	}{
		{"upsert both mechanisms", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("bob", 1, 4096, 32), up("bob", 2, 8192, 64)},
			"bob=0", "bob/SCRAM-SHA-256/false bob/SCRAM-SHA-512/false"},
		{"delete existing", []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("alice", 1)}, nil, "alice=0", "alice/SCRAM-SHA-256/true"},
		{"delete nonexistent", []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("alice", 2)}, nil, fmt.Sprintf("alice=%d", kerr.ResourceNotFound.Code), ""},
		{"unknown mechanism", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("bob", 3, 4096, 32)}, fmt.Sprintf("bob=%d", kerr.UnsupportedSaslMechanism.Code), ""},
		{"too few iterations", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("bob", 1, 4095, 32)}, fmt.Sprintf("bob=%d", kerr.UnacceptableCredential.Code), ""},
		{"too many iterations", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("bob", 1, 16385, 32)}, fmt.Sprintf("bob=%d", kerr.UnacceptableCredential.Code), ""},
		{"salted password of another size than the hash's, stored as Kafka stores it", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("bob", 2, 4096, 18)},
			"bob=0", "bob/SCRAM-SHA-512/false"},
		{"empty user", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("", 1, 4096, 32)}, fmt.Sprintf("=%d", kerr.UnacceptableCredential.Code), ""},
		{"same mechanism deleted and upserted", []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("alice", 1)}, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("alice", 1, 4096, 32)},
			fmt.Sprintf("alice=%d", kerr.DuplicateResource.Code), ""},
		{"one bad user leaves the other applied", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("bob", 1, 4096, 32), up("carol", 1, 10, 32), up("carol", 2, 4096, 64)},
			fmt.Sprintf("bob=0 carol=%d", kerr.UnacceptableCredential.Code), "bob/SCRAM-SHA-256/false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			req.Deletions, req.Upsertions = tc.dels, tc.ups
			alts, resp := planScramAlter(req, have)
			var codes, as []string
			for _, r := range resp.Results {
				codes = append(codes, fmt.Sprintf("%s=%d", r.User, r.ErrorCode))
				if (r.ErrorCode == 0) != (r.ErrorMessage == nil) {
					t.Errorf("%s: code %d with message %v", r.User, r.ErrorCode, r.ErrorMessage)
				}
			}
			for _, a := range alts {
				as = append(as, fmt.Sprintf("%s/%s/%v", a.User, a.Mech, a.Delete))
			}
			if got := strings.Join(codes, " "); got != tc.codes {
				t.Errorf("results %s, want %s", got, tc.codes)
			}
			if got := strings.Join(as, " "); got != tc.alts {
				t.Errorf("alterations %s, want %s", got, tc.alts)
			}
		})
	}
}

func TestDescribeScram(t *testing.T) {
	have := &sasl.Credentials{Users: map[string]map[string]sasl.ScramCredential{
		"bob":   {sasl.ScramSHA512: {Iterations: 8192}},
		"alice": {sasl.ScramSHA256: {Iterations: 4096}, sasl.ScramSHA512: {Iterations: 4096}},
	}}
	for _, tc := range []struct {
		name  string
		users []string
		want  string
	}{
		{"every user", nil, "alice=0[1:4096 2:4096] bob=0[2:8192]"},
		{"by name", []string{"bob"}, "bob=0[2:8192]"},
		{"unknown", []string{"carol"}, fmt.Sprintf("carol=%d[]", kerr.ResourceNotFound.Code)},
		{"asked twice", []string{"bob", "bob"}, fmt.Sprintf("bob=%d[]", kerr.DuplicateResource.Code)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			for _, u := range tc.users {
				ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
				ru.Name = u
				req.Users = append(req.Users, ru)
			}
			var got []string
			for _, r := range describeScram(req, have).Results {
				var infos []string
				for _, ci := range r.CredentialInfos {
					infos = append(infos, fmt.Sprintf("%d:%d", ci.Mechanism, ci.Iterations))
				}
				got = append(got, fmt.Sprintf("%s=%d[%s]", r.User, r.ErrorCode, strings.Join(infos, " ")))
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("got %s, want %s", g, tc.want)
			}
		})
	}
}
